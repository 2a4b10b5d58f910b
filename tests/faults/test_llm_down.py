"""Fault 3: the model server goes away, then comes back.

While it is down the circuit breaker (shared by every worker through Redis) opens after a few
failures; each chat whose turn cannot reach the model is handed to a person with a polite
message (reason `model_unavailable`), and once open the breaker refuses at once instead of
making every customer wait for timeouts. After the cool-down one probe goes through (half-open);
its success closes the breaker and the bot answers again. The cool-down is shortened to 12 s.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from assistant import replies
from assistant.health import breaker_states
from assistant.resilience import replica_id
from inbox import alerts
from inbox.models import Chat, Handoff, Owner, Turn
from inbox.redis import get_redis
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

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(150)]
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


def test_model_down_hands_chats_to_people_then_the_breaker_recovers(
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

        # The model server stops: connections are refused.
        llm.stop()
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

        # The server is back, but the breaker is still cooling down: no request reaches it.
        llm.start()
        assert graph.deliver(message_body(pnid, customer(2), "Is the sofa in stock?")) == 200
        second = _turn_of(channel.pk, customer(2))
        assert (second.outcome, second.reason) == (Turn.Outcome.HANDED_OFF, "model_unavailable")
        assert llm.chat_requests == []

        # After the cool-down, one probe goes through (half-open) and closes the breaker.
        opened_at = float(get_redis().hget(f"llm:breaker:{replica_id(llm.base_url)}", "opened_at"))
        wait_for(lambda: _redis_now() > opened_at + COOLDOWN, timeout=COOLDOWN + 5,
                 message="the cool-down")  # fmt: skip
        llm.script(Step.slow(2.0))  # a slow probe, so its half-open state can be seen
        assert graph.deliver(message_body(pnid, customer(3), "How much is the oak table?")) == 200
        wait_for(lambda: _breaker() == "half_open", timeout=15, message="the half-open probe")
        third = _turn_of(channel.pk, customer(3))

        assert third.outcome == Turn.Outcome.ANSWERED
        assert third.backend == "llm:primary"
        assert _breaker() == "closed"
        assert "oak table" in graph.sent_to(customer(3))[0].text
        alerts.check_all()
        assert alerts.active_alerts(channel.business_id) == []
        assert sorted(Handoff.objects.values_list("reason", flat=True)) == [
            "model_unavailable",
            "model_unavailable",
        ]
    finally:
        group.stop_all()
    print(f"\n[fault 3] model server down and back: {time.monotonic() - started:.1f} s")


def _redis_now() -> float:
    seconds, micros = get_redis().time()
    return float(seconds) + micros / 1_000_000
