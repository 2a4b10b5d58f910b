"""Runs the golden conversations through a backend and scores what a user would notice.

- escalation accuracy: the case was handed to a person exactly when it should have been, and
  for the right reason (a handoff with the wrong reason counts as wrong);
- action accuracy: answer / clarify / handoff as expected;
- JSON validity: share of model calls whose first answer was a valid Decision (repairs and calls
  that got no answer at all count as invalid; the catalogue assistant is valid by construction);
- invented-price rate: share of replies with an amount or percentage the price list does not
  back (the guardrails' own detector);
- price accuracy: share of cases with expected prices whose reply contains all of them;
- latency p50 / p95 of the whole decision.

Nothing here touches the database or Redis: price lists and settings are built in memory from
the golden file, and model calls go through the real client with `NullGuard` (no breaker, no
admission limit), so the figures are the model's, not the resilience layer's.
"""

from __future__ import annotations

import json
import statistics
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from assistant.decision import brain
from assistant.decision.guardrails import findings
from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.knowledge.money import find_amounts
from assistant.llm.client import Completion, Endpoint, LLMClient, MessagesFor
from assistant.llm.resilience import NullGuard
from assistant.models import AssistantSettings
from assistant.schema import Action, HistoryEntry, TurnInput

GOLDEN_PATH = Path(__file__).resolve().parent / "golden.json"
T0 = datetime(2025, 3, 3, 10, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Case:
    id: str
    business: str
    turn: TurnInput
    expected_action: str
    expected_reason: str
    expected_prices: tuple[Decimal, ...]


@dataclass(frozen=True)
class Golden:
    knowledge: dict[str, Knowledge]
    config: dict[str, AssistantSettings]
    cases: tuple[Case, ...]


@dataclass
class CaseResult:
    case: Case
    action: str = ""
    reason: str = ""
    reply: str = ""
    backend: str = ""
    first_valid: bool = True
    answered: bool = True  # the model (or catalogue) gave an answer at all
    invented: list[str] = field(default_factory=list)
    prices_ok: bool | None = None
    latency_ms: float = 0.0
    error: str = ""

    @property
    def escalation_ok(self) -> bool:
        expected_handoff = self.case.expected_action == Action.HANDOFF
        if (self.action == Action.HANDOFF) != expected_handoff:
            return False
        return not expected_handoff or self.reason == self.case.expected_reason


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
        hits = sum(r.action == r.case.expected_action for r in self.results)
        return self._share(hits, len(self.results))

    @property
    def json_validity(self) -> float:
        return self._share(sum(r.first_valid for r in self.results), len(self.results))

    @property
    def invented_price_rate(self) -> float:
        return 1.0 - self._share(sum(not r.invented for r in self.results), len(self.results))

    @property
    def price_accuracy(self) -> float:
        scored = [r for r in self.results if r.prices_ok is not None]
        return self._share(sum(bool(r.prices_ok) for r in scored), len(scored))

    def latency_percentile(self, q: float) -> float:
        values = sorted(r.latency_ms for r in self.results)
        if not values:
            return 0.0
        if len(values) == 1:
            return values[0]
        return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1]

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cases": len(self.results),
            "escalation_accuracy": round(self.escalation_accuracy, 4),
            "action_accuracy": round(self.action_accuracy, 4),
            "json_validity": round(self.json_validity, 4),
            "invented_price_rate": round(self.invented_price_rate, 4),
            "price_accuracy": round(self.price_accuracy, 4),
            "latency_p50_ms": round(self.latency_percentile(0.5), 1),
            "latency_p95_ms": round(self.latency_percentile(0.95), 1),
            "no_answer": sum(not r.answered for r in self.results),
        }


def load_golden(path: Path | None = None) -> Golden:
    raw = json.loads((path or GOLDEN_PATH).read_text(encoding="utf-8"))
    threshold = float(raw.get("voice_confidence_threshold", 0.6))
    knowledge: dict[str, Knowledge] = {}
    config: dict[str, AssistantSettings] = {}
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
            )
            for i in biz["items"]
        )
        knowledge[key] = Knowledge(number, biz["name"], number, items, version=f"golden:{key}")
        row = AssistantSettings(business_rules=biz.get("rules", ""))
        if "forbidden_promises" in biz:
            row.forbidden_promises = biz["forbidden_promises"]
        config[key] = row
    cases = []
    for n, c in enumerate(raw["cases"], 1):
        history = [
            HistoryEntry(
                speaker=h[0],
                text=h[1],
                at=T0 + timedelta(minutes=i),
                voice_confidence=h[2] if len(h) > 2 else None,
            )
            for i, h in enumerate(c.get("history", []))
        ]
        voice = c.get("voice_confidence")
        start = len(history)
        pending = [
            HistoryEntry("customer", text, T0 + timedelta(minutes=start + i), voice)
            for i, text in enumerate(c["pending"])
        ]
        biz = knowledge[c["business"]]
        turn = TurnInput(
            business_id=biz.business_id,
            channel_id=biz.channel_id or 0,
            chat_id=n,
            language=c.get("language", ""),
            history=history,
            pending=pending,
            lowest_voice_confidence=voice,
            voice_confidence_threshold=threshold,
        )
        expected = c["expected"]
        cases.append(
            Case(
                c["id"],
                c["business"],
                turn,
                expected["action"],
                expected.get("reason", ""),
                tuple(Decimal(p) for p in expected.get("prices", [])),
            )
        )
    return Golden(knowledge, config, tuple(cases))


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
            backend=result.backend,
            latency_ms=result.latency_ms,
            error=result.model_error,
        )
        if client is not None:
            completion = getattr(client.local, "completion", None)
            out.first_valid = bool(completion and completion.first_valid)
            out.answered = not (
                result.backend == "fallback" and decision.reason == "model_unavailable"
            )
        found = findings(decision.reply_to_customer, case.turn, knowledge, config)
        out.invented = [f.text for f in found if f.kind in ("price", "percentage")]
        if case.expected_prices:
            present = {a.value for a in find_amounts(decision.reply_to_customer)}
            out.prices_ok = all(p in present for p in case.expected_prices)
        if progress:
            progress(out)
        return out

    if concurrency <= 1:
        results = [one(c) for c in golden.cases]
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            results = list(pool.map(one, golden.cases))
    return Report(name, results)
