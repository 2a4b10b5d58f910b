"""Model-server errors by class through the whole pipeline of real processes: signed webhook →
daphne → ingest consumer → Celery turn → the LLM client → WhatsApp (Graph API emulator), with the
OpenAI emulator answering as a misconfigured server would.

A wrong key, an unknown model, a refused schema or a context too small are configuration errors:
the first turn that meets one hands its chat to a manager with reason `model_misconfigured` (a
polite message to the customer, the cause on the handoff card), the breaker opens at once so the
next chats do not wait on the same refusal, and the `model_misconfigured` alert names the cause
within seconds (the assistant queues the alert check). A 429 waits for its Retry-After and the
bot still answers; a prompt over the context is answered from the compact prompt.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from assistant.decision import replies
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.llm.health import breaker_states
from inbox.conversations.models import Alert, Chat, Handoff, Owner, Turn
from tests.emulators.graph_api import GraphApiEmulator
from tests.emulators.openai_server import OpenAIEmulator, Step, approx_tokens, render_prompt
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
_customers = itertools.count(500)
PRICES = "SKU;Name;Price;Currency;Stock\n" + "".join(
    f"SKU-{n};{kind} model {n};{(n + 1) * 1000};KZT;yes\n"
    for n, kind in enumerate(["Oak table", "Sofa", "Office chair", "Wardrobe"] * 12)
)
MAX_TOKENS = 512  # the inbox's LLM_MAX_TOKENS default


@pytest.fixture
def graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator(app_secret="model-errors-secret") as emulator:
        yield emulator


@pytest.fixture
def llm() -> Iterator[OpenAIEmulator]:
    with OpenAIEmulator(api_key="the-right-key") as emulator:
        yield emulator


@pytest.fixture
def stack(subprocess_env, graph, llm, settings) -> Iterator[tuple[Any, str]]:
    settings.LLM_BASE_URL = llm.base_url  # the test reads the breaker the workers share
    settings.LLM_API_KEY = "the-right-key"
    env = stack_env(subprocess_env, graph, llm.base_url, LLM_API_KEY="the-right-key",
                    LLM_MAX_RETRIES="2", LLM_RETRY_BACKOFF_SECONDS="0.05",
                    LLM_BREAKER_COOLDOWN_SECONDS="600", LLM_TIMEOUT_SECONDS="10")  # fmt: skip
    group = ProcessGroup(env)
    try:
        running = Stack(group, "modelerr").start()
        graph.webhook_url = f"{running.web[0]}/webhooks/whatsapp/"
        channel, pnid = cloud_channel(graph)
        apply_price_list(parse_price_file(PRICES.encode(), "prices.csv"), channel.business)
        yield channel, pnid
    finally:
        group.stop_all()


def _ask(graph: GraphApiEmulator, channel: Any, pnid: str, text: str) -> tuple[str, Turn]:
    wa_id = customer(next(_customers))
    assert graph.deliver(message_body(pnid, wa_id, text)) == 200
    chat = wait_for(lambda: Chat.objects.filter(channel=channel, customer_key=wa_id).first())
    (turn,) = wait_for(lambda: finished_turns(chat.pk), timeout=60, message=f"{wa_id}'s turn")
    return wa_id, turn


@pytest.mark.parametrize(
    ("script", "cause"),
    [
        (None, "HTTP 401: the model server refused the API key"),  # the real key check
        (Step.unknown_model("assistant"), "HTTP 404: unknown model"),
        (Step.schema_rejected(), "HTTP 422: the server refused the request's schema"),
        (Step.context_too_long(max_len=2048, prompt_tokens=3900, server="llama.cpp"),
         "prompt over the model's context"),
    ],
)  # fmt: skip
def test_a_misconfigured_model_server_hands_chats_off_names_the_cause_and_opens_the_breaker(
    stack, graph, llm, subprocess_env, script, cause
) -> None:
    channel, pnid = stack
    if script is None:
        llm.api_key = "another-key"  # the inbox's key is now wrong
    else:
        # The context overflow is answered twice (full prompt, then the compact one).
        llm.script(script, script)
    wa_id, turn = _ask(graph, channel, pnid, "How much is the oak table?")

    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "model_misconfigured")
    (notice,) = graph.sent_to(wa_id)
    assert notice.text == replies.handoff_message("model_misconfigured", "en")
    assert cause not in notice.text  # the customer is spared the cause
    assert "HTTP" not in notice.text
    handoff = Handoff.objects.get(chat__customer_key=wa_id)
    assert cause in handoff.summary  # what the manager reads on the card
    assert Chat.objects.get(pk=handoff.chat_id).owner == Owner.PENDING_HUMAN
    assert list(breaker_states().values()) == ["open"]

    # The alert, raised by the check the assistant queued, not by the minute beat.
    alert = wait_for(
        lambda: Alert.objects.filter(kind="model_misconfigured", resolved_at__isnull=True).first(),
        timeout=20,
        message="the model_misconfigured alert",
    )
    assert cause in alert.message
    assert not Alert.objects.filter(kind="llm_breaker_open", resolved_at__isnull=True).exists()

    # The next customer is handed off at once for the same cause, without another request.
    sent = len(llm.chat_requests)
    _, second = _ask(graph, channel, pnid, "Is the sofa in stock?")
    assert second.reason == "model_misconfigured"
    assert cause in second.model_error
    assert len(llm.chat_requests) == sent


def test_a_429_waits_for_retry_after_and_the_bot_still_answers(stack, graph, llm) -> None:
    channel, pnid = stack
    llm.script(Step.rate_limited(retry_after=1), Step.decision(reply="The oak table is in stock."))
    wa_id, turn = _ask(graph, channel, pnid, "Is the oak table in stock?")
    assert turn.outcome == Turn.Outcome.ANSWERED
    assert graph.sent_to(wa_id)[0].text == "The oak table is in stock."
    first, second = llm.chat_requests
    assert second.at - first.at >= 1.0
    assert list(breaker_states().values()) == ["closed"]


def test_a_prompt_over_the_context_is_answered_from_the_compact_prompt(stack, graph, llm) -> None:
    channel, pnid = stack
    # Learn the full prompt's size from one ordinary turn, then give the server a context that
    # the full prompt overflows and the compact one fits.
    _ask(graph, channel, pnid, "Hello")
    full = approx_tokens(render_prompt(llm.chat_requests[-1].messages))
    llm.max_model_len = full + MAX_TOKENS - 150  # the full prompt overflows by 150 tokens
    # (An echo would repeat the message's timestamp, which the guardrail rightly holds back.)
    llm.responder = lambda request: Step.decision(reply="Hello! What can I find for you?")
    wa_id, turn = _ask(graph, channel, pnid, "Hello again")
    assert turn.outcome == Turn.Outcome.ANSWERED, (turn.reason, turn.model_error)
    assert graph.sent_to(wa_id)[0].text == "Hello! What can I find for you?"
    overflowed, compact = llm.chat_requests[-2:]
    assert len(render_prompt(compact.messages)) < len(render_prompt(overflowed.messages))
    assert list(breaker_states().values()) == ["closed"]
