"""Fault 3: the model server goes away for a minute, then comes back.

While it is down the circuit breaker (shared by every worker through Redis) opens after a few
failures; each chat whose turn cannot reach the model is handed to a person with a polite
message (reason `model_unavailable`), and once open the breaker refuses at once instead of
making every customer wait for timeouts. After the cool-down one probe goes through (half-open);
while the server is still down that probe fails and the breaker opens again; once the server is
back, the next probe's success closes the breaker and the bot answers again. The cool-down is
shortened to 12 s so a one-minute outage sees several failed probes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from assistant.decision import replies
from assistant.llm.health import breaker_states
from assistant.llm.resilience import replica_id
from inbox.conversations.models import Chat, Handoff, Owner, Turn
from inbox.platform.redis import get_redis
from inbox.upkeep import alerts
from tests.emulators.graph_api import GraphApiEmulator
from tests.emulators.openai_server import OpenAIEmulator, Step
from tests.faults.helpers import (
    Stack,
    cloud_channel,
    customer,
    finished_turns,
    message_body,
    stack_env,
)
from tests.processes import ProcessGroup, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
OUTAGE = 60.0
COOLDOWN = 12.0


@pytest.fixture
def graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator(app_secret="llm-down-secret") as emulator:
        yield emulator


@pytest.fixture
def llm() -> Iterator[OpenAIEmulator]:
    emulator = OpenAIEmulator().start()
    yield emulator
    emulator.stop()


def _turn_of(channel_id: int, wa_id: str) -> Turn:
    chat = wait_for(lambda: Chat.objects.filter(channel_id=channel_id, customer_key=wa_id).first())
    (turn,) = wait_for(lambda: finished_turns(chat.pk), timeout=30, message=f"{wa_id}'s turn")
    return turn


def _breaker() -> str:
    (state,) = breaker_states().values()
    return state


def _opened_at(base_url: str) -> float:
    return float(get_redis().hget(f"llm:breaker:{replica_id(base_url)}", "opened_at") or 0)


def _wait_for_cooldown(opened_at: float) -> None:
    wait_for(lambda: _redis_now() > opened_at + COOLDOWN, timeout=COOLDOWN + 5,
             message="the cool-down")  # fmt: skip


def test_model_down_for_a_minute_hands_chats_to_people_then_the_breaker_recovers(
    subprocess_env: dict[str, str], graph: GraphApiEmulator, llm: OpenAIEmulator, settings: Any
) -> None:
    started = time.monotonic()
    resilience = {"LLM_BREAKER_FAILURES": "2", "LLM_BREAKER_COOLDOWN_SECONDS": str(COOLDOWN),
                  "LLM_MAX_RETRIES": "1", "LLM_RETRY_BACKOFF_SECONDS": "0.05",
                  "LLM_CONNECT_TIMEOUT_SECONDS": "1", "LLM_TIMEOUT_SECONDS": "10"}  # fmt: skip
    settings.LLM_BASE_URL = llm.base_url  # the test reads the breaker the workers share
    group = ProcessGroup(stack_env(subprocess_env, graph, llm.base_url, **resilience))
    try:
        stack = Stack(group, "llmdown").start()
        graph.webhook_url = f"{stack.web[0]}/webhooks/whatsapp/"
        channel, pnid = cloud_channel(graph)

        # The model server stops: connections are refused, for a minute.
        llm.stop()
        outage_started = time.monotonic()
        assert graph.deliver(message_body(pnid, customer(1), "Do you deliver to Astana?")) == 200
        first = _turn_of(channel.pk, customer(1))

        assert (first.outcome, first.reason) == (Turn.Outcome.HANDED_OFF, "model_unavailable")
        assert _breaker() == "open"  # two refused attempts opened it
        (notice,) = graph.sent_to(customer(1))
        assert notice.text == replies.handoff_message("model_unavailable", "en")
        assert Chat.objects.get(channel=channel, customer_key=customer(1)).owner == (
            Owner.PENDING_HUMAN
        )
        alerts.check_all()
        assert [a.kind for a in alerts.active_alerts(channel.business_id)] == ["llm_breaker_open"]

        # Through the rest of the minute, each cool-down ends in one probe that fails: the
        # breaker opens again and that customer, too, is handed to a person at once.
        n = 1
        while time.monotonic() - outage_started < OUTAGE:
            opened_at = _opened_at(llm.base_url)
            _wait_for_cooldown(opened_at)
            n += 1
            assert graph.deliver(message_body(pnid, customer(n), "Is the sofa in stock?")) == 200
            turn = _turn_of(channel.pk, customer(n))
            assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "model_unavailable")
            assert _breaker() == "open"
            assert _opened_at(llm.base_url) > opened_at  # the failed probe re-opened it
            assert graph.sent_to(customer(n))[0].text == notice.text
        assert n >= 4

        # The server is back, but the breaker is still cooling down: no request reaches it.
        llm.start()
        n += 1
        assert graph.deliver(message_body(pnid, customer(n), "Is the sofa in stock?")) == 200
        turn = _turn_of(channel.pk, customer(n))
        assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "model_unavailable")
        assert llm.chat_requests == []

        # After the cool-down, one probe goes through (half-open) and closes the breaker.
        _wait_for_cooldown(_opened_at(llm.base_url))
        llm.script(Step.slow(2.0))  # a slow probe, so its half-open state can be seen
        n += 1
        assert graph.deliver(message_body(pnid, customer(n), "How much is the oak table?")) == 200
        wait_for(lambda: _breaker() == "half_open", timeout=15, message="the half-open probe")
        last = _turn_of(channel.pk, customer(n))

        assert last.outcome == Turn.Outcome.ANSWERED
        assert last.backend == "llm:primary"
        assert _breaker() == "closed"
        assert "oak table" in graph.sent_to(customer(n))[0].text
        alerts.check_all()
        assert alerts.active_alerts(channel.business_id) == []
        reasons = list(Handoff.objects.values_list("reason", flat=True))
        assert reasons == ["model_unavailable"] * (n - 1)  # everyone but the last customer
        assert Chat.objects.filter(channel=channel, owner=Owner.PENDING_HUMAN).count() == n - 1
    finally:
        group.stop_all()
    print(f"\n[fault 3] model server down for {OUTAGE:.0f} s and back: "
          f"{time.monotonic() - started:.1f} s, {n - 1} customers handed to people")  # fmt: skip


def _redis_now() -> float:
    seconds, micros = get_redis().time()
    return float(seconds) + micros / 1_000_000
