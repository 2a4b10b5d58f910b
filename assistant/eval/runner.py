"""Runs the golden conversations through a backend and scores what a user would notice.

- escalation accuracy: the case was handed to a person exactly when it should have been, and
  for the right reason (a handoff with the wrong reason counts as wrong);
- action accuracy: answer / clarify / handoff as expected;
- JSON validity: share of model calls whose first answer was a valid Decision (repairs and calls
  that got no answer at all count as invalid; the catalogue assistant is valid by construction);
- price accuracy: share of cases with expected amounts whose reply contains all of them;
- wrong amounts: amounts (>= 100, or any percentage) in a reply that a right reply for the case
  could not contain, read by the eval's own judge (`assistant.eval.judge`), never by the
  guardrail it is meant to check; the wrong-amount rate is the share of replies with one;
- summary: share of handoff cases with `summary_must` (the facts a right handoff summary
  carries: items, numbers, a city, "refund"…) whose summary carries all of them, read by the
  judge (`judge.summary_misses`: case-insensitive, numbers by value); a case not handed off
  misses;
- latency p50 / p95 of the whole decision;
- all of it per category ("negation", "multi_item", "voice", …) and per business.

A case may accept another outcome besides the expected one (`expected.accept`, e.g. "answer
with the price the manager agreed, or hand off"); either counts as right.

Nothing here touches the database or Redis: price lists and settings are built in memory from
the golden files, and model calls go through the real client with `NullGuard` (no breaker, no
admission limit), so the figures are the model's, not the resilience layer's.
"""

from __future__ import annotations

import json
import statistics
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from assistant.decision import brain
from assistant.eval.judge import Verdict, judge, name_numbers, parse_allowed, summary_misses
from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.llm.client import Completion, Endpoint, LLMClient, MessagesFor
from assistant.llm.resilience import NullGuard
from assistant.models import AssistantSettings, split_aliases
from assistant.schema import Action, HistoryEntry, TurnInput
from inbox.conversations.models import HandoffReason

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
BUSINESSES_FILE = "businesses.json"
T0 = datetime(2025, 3, 3, 10, 0, tzinfo=UTC)
ANY_REASON = "*"


@dataclass(frozen=True)
class Business:
    """A golden business as the judge sees it: what any reply of its may always state."""

    key: str
    rule_amounts: frozenset[str]  # amounts in its business rules (delivery fee, assembly, …)
    listed: frozenset[str]  # every list price and rule amount: "misplaced" vs "made up"
    name_numbers: frozenset[Decimal]  # numbers inside item names and SKUs ("table 160")


@dataclass(frozen=True)
class Case:
    id: str
    business: str
    turn: TurnInput
    expected_action: str
    expected_reason: str
    expected_prices: tuple[Decimal, ...]  # amounts a right reply must contain
    allowed: frozenset[str] = frozenset()  # further amounts a right reply may contain
    accept: tuple[tuple[str, str], ...] = ()  # other (action, reason) outcomes that are right
    categories: tuple[str, ...] = ()
    language: str = ""
    note: str = ""
    forbidden: frozenset[str] = (
        frozenset()
    )  # rule amounts that are wrong here (free delivery agreed)
    summary_must: tuple[str, ...] = ()  # facts a right handoff summary carries
    expected_percents: tuple[str, ...] = ()  # percentages a right reply must state ("10%")

    @property
    def required(self) -> tuple[str, ...]:
        prices = tuple(parse_allowed(p) for p in self.expected_prices)
        return prices + tuple(parse_allowed(p) for p in self.expected_percents)

    def outcomes(self) -> tuple[tuple[str, str], ...]:
        return ((self.expected_action, self.expected_reason), *self.accept)


@dataclass(frozen=True)
class Golden:
    knowledge: dict[str, Knowledge]
    config: dict[str, AssistantSettings]
    cases: tuple[Case, ...]
    businesses: dict[str, Business] = field(default_factory=dict)


@dataclass
class CaseResult:
    case: Case
    action: str = ""
    reason: str = ""
    reply: str = ""
    backend: str = ""
    first_valid: bool = True
    answered: bool = True  # the model (or catalogue) gave an answer at all
    invented: list[str] = field(default_factory=list)  # the wrong amounts, as written
    unlisted: list[str] = field(default_factory=list)  # wrong and in no list or rule at all
    missing: list[str] = field(default_factory=list)  # required amounts the reply lacks
    prices_ok: bool | None = None
    summary: str = ""  # the handoff summary a manager reads on the card
    summary_missing: list[str] = field(default_factory=list)  # `summary_must` facts it lacks
    latency_ms: float = 0.0
    error: str = ""

    @property
    def escalation_ok(self) -> bool:
        """Handed off exactly when expected, and then for the expected reason."""
        handed_off = self.action == Action.HANDOFF
        for action, reason in self.case.outcomes():
            if handed_off != (action == Action.HANDOFF):
                continue
            if not handed_off or reason in (ANY_REASON, self.reason):
                return True
        return False

    @property
    def summary_ok(self) -> bool | None:
        """Handed off with a summary that carries every fact of `summary_must` (None: the
        case scores no summary)."""
        if not self.case.summary_must:
            return None
        return self.action == Action.HANDOFF and not self.summary_missing

    @property
    def action_ok(self) -> bool:
        return any(self.action == action for action, _ in self.case.outcomes())

    @property
    def ok(self) -> bool:
        """Everything a user would notice was right."""
        return (
            self.escalation_ok
            and self.action_ok
            and not self.invented
            and self.prices_ok is not False
        )


@dataclass
class Report:
    name: str
    results: list[CaseResult]

    def _share(self, hits: int, total: int) -> float:
        return hits / total if total else 1.0

    @property
    def escalation_accuracy(self) -> float:
        return self._share(sum(r.escalation_ok for r in self.results), len(self.results))

    @property
    def action_accuracy(self) -> float:
        return self._share(sum(r.action_ok for r in self.results), len(self.results))

    @property
    def json_validity(self) -> float:
        return self._share(sum(r.first_valid for r in self.results), len(self.results))

    @property
    def wrong_amounts(self) -> int:
        return sum(len(r.invented) for r in self.results)

    @property
    def wrong_unlisted(self) -> int:
        """Wrong amounts that are no list price or rule amount of the business at all."""
        return sum(len(r.unlisted) for r in self.results)

    @property
    def wrong_amount_rate(self) -> float:
        """Share of replies with at least one amount a right reply could not contain."""
        return 1.0 - self._share(sum(not r.invented for r in self.results), len(self.results))

    @property
    def invented_price_rate(self) -> float:
        """The wrong-amount rate under the name the thresholds and older reports use."""
        return self.wrong_amount_rate

    @property
    def price_accuracy(self) -> float:
        scored = [r for r in self.results if r.prices_ok is not None]
        return self._share(sum(bool(r.prices_ok) for r in scored), len(scored))

    @property
    def summary_score(self) -> float:
        """Share of the cases with `summary_must` handed off with all those facts."""
        scored = [r for r in self.results if r.summary_ok is not None]
        return self._share(sum(bool(r.summary_ok) for r in scored), len(scored))

    def latency_percentile(self, q: float) -> float:
        values = sorted(r.latency_ms for r in self.results)
        if not values:
            return 0.0
        if len(values) == 1:
            return values[0]
        return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1]

    def scores(self) -> dict[str, Any]:
        """The quality figures (what the breakdowns show per group)."""
        return {
            "cases": len(self.results),
            "escalation_accuracy": round(self.escalation_accuracy, 4),
            "action_accuracy": round(self.action_accuracy, 4),
            "price_accuracy": round(self.price_accuracy, 4),
            "priced_cases": sum(r.prices_ok is not None for r in self.results),
            "wrong_amounts": self.wrong_amounts,
            "wrong_amount_rate": round(self.wrong_amount_rate, 4),
            "wrong_unlisted": self.wrong_unlisted,
            "summary": round(self.summary_score, 4),
            "summary_cases": sum(r.summary_ok is not None for r in self.results),
        }

    def by(self, keys: Callable[[CaseResult], Iterable[str]]) -> dict[str, dict[str, Any]]:
        """The scores per group, a case counting in every group `keys` gives it."""
        groups: dict[str, list[CaseResult]] = {}
        for r in self.results:
            for key in keys(r):
                groups.setdefault(key, []).append(r)
        return {k: Report(k, v).scores() for k, v in sorted(groups.items())}

    def by_category(self) -> dict[str, dict[str, Any]]:
        return self.by(lambda r: r.case.categories)

    def by_business(self) -> dict[str, dict[str, Any]]:
        return self.by(lambda r: (r.case.business,))

    def by_language(self) -> dict[str, dict[str, Any]]:
        return self.by(lambda r: (r.case.language or "?",))

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            **self.scores(),
            "json_validity": round(self.json_validity, 4),
            "invented_price_rate": round(self.invented_price_rate, 4),
            "latency_p50_ms": round(self.latency_percentile(0.5), 1),
            "latency_p95_ms": round(self.latency_percentile(0.95), 1),
            "no_answer": sum(not r.answered for r in self.results),
            "by_category": self.by_category(),
            "by_business": self.by_business(),
            "by_language": self.by_language(),
        }


def load_golden(path: Path | None = None) -> Golden:
    """The golden set: a folder (`businesses.json` and any number of case files, each a list of
    cases or {"cases": [...]}) or one file holding both "businesses" and "cases"."""
    path = path or GOLDEN_DIR
    if path.is_dir():
        raw = json.loads((path / BUSINESSES_FILE).read_text(encoding="utf-8"))
        cases: list[dict[str, Any]] = []
        for file in sorted(path.glob("*.json")):
            if file.name == BUSINESSES_FILE:
                continue
            data = json.loads(file.read_text(encoding="utf-8"))
            cases += data["cases"] if isinstance(data, dict) else data
        raw["cases"] = cases
    else:
        raw = json.loads(path.read_text(encoding="utf-8"))
    return _build(raw)


def _build(raw: dict[str, Any]) -> Golden:
    threshold = float(raw.get("voice_confidence_threshold", 0.6))
    knowledge: dict[str, Knowledge] = {}
    config: dict[str, AssistantSettings] = {}
    businesses: dict[str, Business] = {}
    for number, (key, biz) in enumerate(sorted(raw["businesses"].items()), 1):
        items = tuple(
            KnowledgeItem(
                sku=i.get("sku", ""),
                name=i["name"],
                price=Decimal(i["price"]),
                currency=i.get("currency", ""),
                unit=i.get("unit", ""),
                description=i.get("description", ""),
                availability=i.get("availability", "unknown"),
                availability_note=i.get("availability_note", ""),
                aliases=_aliases(i.get("aliases", ())),
            )
            for i in biz["items"]
        )
        knowledge[key] = Knowledge(number, biz["name"], number, items, version=f"golden:{key}")
        row = AssistantSettings(business_rules=biz.get("rules", ""))
        if "forbidden_promises" in biz:
            row.forbidden_promises = biz["forbidden_promises"]
        config[key] = row
        rule_amounts = frozenset(parse_allowed(a) for a in biz.get("rule_amounts", []))
        prices = {parse_allowed(i.price) for i in items}
        businesses[key] = Business(
            key,
            rule_amounts,
            frozenset(prices | rule_amounts),
            name_numbers(
                [i.name for i in items]
                + [i.sku for i in items]
                + [a for i in items for a in i.aliases]
            ),
        )
    cases = []
    seen: set[str] = set()
    for n, c in enumerate(raw["cases"], 1):
        if c["id"] in seen:
            raise ValueError(f"golden case id {c['id']!r} is used twice")
        seen.add(c["id"])
        cases.append(_case(n, c, knowledge[c["business"]], threshold))
    return Golden(knowledge, config, tuple(cases), businesses)


def _aliases(written: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """An item's `aliases`, as a list or as the price list's one cell ("a, b; c")."""
    return split_aliases(written) if isinstance(written, str) else tuple(written)


def _case(n: int, c: dict[str, Any], biz: Knowledge, threshold: float) -> Case:
    history = [
        HistoryEntry(
            speaker=h[0],
            text=h[1],
            at=T0 + timedelta(minutes=i),
            voice_confidence=h[2] if len(h) > 2 else None,
        )
        for i, h in enumerate(c.get("history", []))
    ]
    # A pending message is its text, or [text, voice confidence] for a voice note.
    voice = c.get("voice_confidence")
    start = len(history)
    pending = []
    for i, p in enumerate(c["pending"]):
        text, confidence = (p, voice) if isinstance(p, str) else (p[0], p[1])
        pending.append(
            HistoryEntry("customer", text, T0 + timedelta(minutes=start + i), confidence)
        )
    confidences = [p.voice_confidence for p in pending if p.voice_confidence is not None]
    turn = TurnInput(
        business_id=biz.business_id,
        channel_id=biz.channel_id or 0,
        chat_id=n,
        language=c.get("language", ""),
        history=history,
        pending=pending,
        lowest_voice_confidence=min(confidences) if confidences else None,
        voice_confidence_threshold=threshold,
    )
    expected = c["expected"]
    accept = tuple(
        (a.split("/", 1)[0], a.split("/", 1)[1] if "/" in a else "")
        for a in expected.get("accept", [])
    )
    return Case(
        c["id"],
        c["business"],
        turn,
        expected["action"],
        expected.get("reason", ""),
        tuple(Decimal(str(p)) for p in expected.get("prices", []) if not str(p).endswith("%")),
        frozenset(parse_allowed(a) for a in expected.get("allowed", [])),
        accept,
        tuple(c.get("categories", [])),
        c.get("language", ""),
        c.get("note", ""),
        frozenset(parse_allowed(a) for a in expected.get("forbidden", [])),
        tuple(str(f) for f in expected.get("summary_must", [])),
        tuple(str(p) for p in expected.get("prices", []) if str(p).endswith("%")),
    )


def verdict_for(reply: str, case: Case, business: Business | None) -> Verdict:
    """The judge's reading of one reply for one case."""
    allowed = set(case.allowed)
    ignore: frozenset[Decimal] = frozenset()
    if business is not None:
        allowed |= business.rule_amounts
        ignore = business.name_numbers
    return judge(reply, case.required, allowed - case.forbidden, ignore)


class RecordingClient(LLMClient):
    """The real client, remembering per thread how each call went (first answer valid?)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.local = threading.local()

    def complete_decision(
        self, messages_for: MessagesFor, *, business_id: int, prompt_version: str = "v1"
    ) -> Completion:
        self.local.completion = None
        completion = super().complete_decision(
            messages_for, business_id=business_id, prompt_version=prompt_version
        )
        self.local.completion = completion
        return completion


def eval_client(
    base_url: str,
    model: str,
    structured_output: str,
    api_key: str = "",
    timeout: float = 60.0,
    stream: bool = True,
    max_tokens: int = 512,
) -> RecordingClient:
    urls = tuple(u.strip().rstrip("/") for u in base_url.split(",") if u.strip())
    endpoint = Endpoint("primary", urls, model, api_key, structured_output)
    return RecordingClient(
        [endpoint],
        NullGuard(),
        timeout=timeout,
        connect_timeout=min(5.0, timeout),
        max_retries=1,
        backoff=0.2,
        admission_wait=0.0,
        stream=stream,
        max_tokens=max_tokens,
        temperature=0.0,
    )


def run(
    golden: Golden,
    client: RecordingClient | None,
    name: str,
    concurrency: int = 1,
    progress: Callable[[CaseResult], None] | None = None,
) -> Report:
    def one(case: Case) -> CaseResult:
        knowledge = golden.knowledge[case.business]
        config = golden.config[case.business]
        result = brain.decide_with(case.turn, knowledge, config, client=client)
        decision = result.decision
        out = CaseResult(
            case=case,
            action=decision.action.value,
            reason=decision.reason,
            reply=decision.reply_to_customer,
            summary=decision.summary,
            backend=result.backend,
            latency_ms=result.latency_ms,
            error=result.model_error,
        )
        if client is not None:
            completion = getattr(client.local, "completion", None)
            out.first_valid = bool(completion and completion.first_valid)
            out.answered = not (
                result.backend == "fallback" and decision.reason == HandoffReason.MODEL_UNAVAILABLE
            )
        business = golden.businesses.get(case.business)
        verdict = verdict_for(decision.reply_to_customer, case, business)
        out.invented = [a.text for a in verdict.wrong]
        listed = business.listed if business is not None else frozenset()
        out.unlisted = [a.text for a in verdict.wrong if a.key not in listed]
        out.missing = list(verdict.missing)
        if case.required:
            out.prices_ok = not verdict.missing
        if case.summary_must:
            out.summary_missing = summary_misses(decision.summary, case.summary_must)
        if progress:
            progress(out)
        return out

    if concurrency <= 1:
        results = [one(c) for c in golden.cases]
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            results = list(pool.map(one, golden.cases))
    return Report(name, results)
