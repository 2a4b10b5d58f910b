"""End to end with real processes: the webhook server (as deployed behind nginx's WhatsApp routes),
the ingest consumer, a Celery worker running turns, the Graph API, bridge and OpenAI-compatible
emulators over HTTP."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from inbox.conversations.models import Channel, Chat, Message, Owner, Turn
from inbox.web import actions, status_actions
from tests import factories
from tests.emulators.bridge import BridgeEmulator
from tests.emulators.graph_api import (
    GraphApiEmulator,
    contact,
    echo_message,
    envelope,
    media_message,
    text_message,
)
from tests.emulators.openai_server import OpenAIEmulator, Step
from tests.processes import ProcessGroup, ingest_drained, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

CUSTOMER = "77011234567"
_numbers = iter(range(106540352242000, 106540352243000))


@pytest.fixture(scope="module")
def graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator(app_secret="pipeline-secret") as emulator:
        yield emulator


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAIEmulator]:
    with OpenAIEmulator() as emulator:
        yield emulator


@pytest.fixture(scope="module")
def stack(
    subprocess_env: dict[str, str], graph: GraphApiEmulator, llm: OpenAIEmulator
) -> Iterator[str]:
    env = {
        **subprocess_env,
        "WHATSAPP_GRAPH_URL": graph.graph_url,
        "WHATSAPP_APP_SECRET": graph.app_secret,
        "LLM_BASE_URL": llm.base_url,
        "LLM_MODEL": "assistant",
    }
    group = ProcessGroup(env)
    hooks = group.start_webhook_server("pipeline-webhooks")
    group.start(
        "pipeline-ingest", [sys.executable, "manage.py", "ingest_worker", "--claim-idle-ms", "2000"]
    )
    group.start_celery_worker("pipeline-worker")
    graph.webhook_url = f"{hooks}/webhooks/whatsapp/"
    yield hooks
    group.stop_all()


@pytest.fixture(autouse=True)
def _reset(graph: GraphApiEmulator, llm: OpenAIEmulator) -> None:
    graph.reset()
    llm.clear_script()
    llm.requests.clear()


@pytest.fixture
def pnid() -> str:
    """A fresh business number per test (the webhook caches number → channel for a few seconds)."""
    return str(next(_numbers))


def _cloud_channel(graph: GraphApiEmulator, pnid: str, debounce: float = 0.3) -> Channel:
    channel = factories.channel(kind=Channel.Kind.CLOUD_API, phone_number_id=pnid, access_token="pipeline-token",
                                debounce_seconds=debounce)  # fmt: skip
    graph.register_number(pnid, "pipeline-token")
    return channel


def _customer_says(graph: GraphApiEmulator, pnid: str, text: str, **kw: Any) -> dict[str, Any]:
    message = text_message(CUSTOMER, text, **kw)
    assert graph.deliver(envelope(pnid, messages=[message], contacts=[contact(CUSTOMER)])) == 200
    return message


def _finished_turns(chat_id: int) -> list[Turn]:
    return list(
        Turn.objects.filter(chat_id=chat_id).exclude(outcome=Turn.Outcome.RUNNING).order_by("pk")
    )


def _chat() -> Chat:
    return wait_for(
        lambda: Chat.objects.filter(customer_key=CUSTOMER).first(), message="the chat to exist"
    )


def test_replayed_delivery_five_times_is_one_message_and_one_reply(
    stack: str, pnid: str, graph: GraphApiEmulator
) -> None:
    _cloud_channel(graph, pnid)
    body = envelope(
        pnid,
        messages=[text_message(CUSTOMER, "Do you deliver to Astana?")],
        contacts=[contact(CUSTOMER)],
    )

    statuses = graph.deliver_many([body], copies=5, concurrency=5)

    assert statuses == [200] * 5
    chat = _chat()
    wait_for(lambda: _finished_turns(chat.pk), message="the turn to finish")
    wait_for(lambda: graph.sent_to(CUSTOMER), message="the reply")
    assert Message.objects.filter(chat=chat, direction="in").count() == 1
    assert len(graph.sent_to(CUSTOMER)) == 1
    assert len(_finished_turns(chat.pk)) == 1


def test_burst_of_three_messages_inside_the_window_is_one_turn(
    stack: str, pnid: str, graph: GraphApiEmulator, llm: OpenAIEmulator
) -> None:
    _cloud_channel(graph, pnid, debounce=2.0)

    for text in ("hi", "how much is the oak table", "and delivery to Almaty?"):
        _customer_says(graph, pnid, text)

    chat = _chat()
    wait_for(lambda: graph.sent_to(CUSTOMER), message="the reply")
    wait_for(lambda: _finished_turns(chat.pk))
    assert len(_finished_turns(chat.pk)) == 1
    (request,) = llm.chat_requests
    prompt = "\n".join(str(m.get("content")) for m in request.messages)
    assert "hi" in prompt
    assert "oak table" in prompt
    assert "delivery to Almaty" in prompt
    assert len(graph.sent_to(CUSTOMER)) == 1


def test_manager_writing_from_the_phone_while_the_model_thinks_stops_the_reply(
    stack: str, pnid: str, graph: GraphApiEmulator, llm: OpenAIEmulator
) -> None:
    _cloud_channel(graph, pnid)
    llm.script(Step.slow(4.0))

    _customer_says(graph, pnid, "Can I pay by card?")
    wait_for(lambda: llm.chat_requests, message="the model to be asked")
    echo = echo_message("15550783881", CUSTOMER, "Yes, card is fine. I'll send the invoice.")
    assert graph.deliver(envelope(pnid, echoes=[echo], contacts=[contact(CUSTOMER)])) == 200

    chat = _chat()
    (turn,) = wait_for(lambda: _finished_turns(chat.pk), timeout=30)
    assert turn.outcome == Turn.Outcome.DROPPED_OWNER
    chat.refresh_from_db()
    assert chat.owner == Owner.HUMAN
    assert graph.sent_to(CUSTOMER) == []
    assert Message.objects.get(chat=chat, author="phone").text.startswith("Yes, card is fine")


def test_new_customer_message_mid_generation_drops_the_stale_reply_and_answers_once(
    stack: str, pnid: str, graph: GraphApiEmulator, llm: OpenAIEmulator
) -> None:
    _cloud_channel(graph, pnid)
    llm.script(Step.slow(3.0))

    _customer_says(graph, pnid, "How much is a chair?")
    wait_for(lambda: llm.chat_requests, message="the first generation to start")
    _customer_says(graph, pnid, "Actually, two chairs")

    chat = _chat()
    wait_for(lambda: len(_finished_turns(chat.pk)) == 2, timeout=30, message="both turns")
    outcomes = [t.outcome for t in _finished_turns(chat.pk)]
    assert sorted(outcomes) == sorted([Turn.Outcome.DROPPED_STALE, Turn.Outcome.ANSWERED])
    (reply,) = graph.sent_to(CUSTOMER)
    assert "two chairs" in reply.text  # the fresh turn saw the newest message


def test_late_message_after_an_outage_goes_to_a_human(
    stack: str, pnid: str, graph: GraphApiEmulator, llm: OpenAIEmulator
) -> None:
    _cloud_channel(graph, pnid)

    _customer_says(graph, pnid, "Is the sofa in stock?", ts=int(time.time()) - 2 * 3600)

    chat = _chat()
    (turn,) = wait_for(lambda: _finished_turns(chat.pk))
    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "late")
    chat.refresh_from_db()
    assert chat.owner == Owner.PENDING_HUMAN
    assert llm.chat_requests == []  # the model was not asked about a two-hour-old question
    assert len(graph.sent_to(CUSTOMER)) == 1  # the customer is told a person will answer


def test_a_customer_without_a_phone_is_answered_at_their_bsuid_and_stays_one_chat(
    stack: str, pnid: str, graph: GraphApiEmulator
) -> None:
    """2026: a customer who uses a WhatsApp username comes with a business-scoped user id and
    no phone; later Meta may send their phone too. One chat throughout."""
    channel = _cloud_channel(graph, pnid)
    bsuid = "KZ.88123456789012345"
    graph.auto_statuses = True  # the statuses name only the BSUID (recipient_user_id)
    try:
        body = envelope(
            pnid,
            messages=[text_message("", "Do you deliver to Astana?", user_id=bsuid)],
            contacts=[contact("", "Aigerim", bsuid, username="aigerim.k")],
        )
        assert graph.deliver(body) == 200

        (sent,) = wait_for(lambda: graph.sent_to(bsuid), message="the reply at the BSUID")
        assert (sent.to, sent.recipient) == ("", bsuid)
        reply = wait_for(
            lambda: Message.objects.filter(provider_message_id=sent.wamid, status="read").first(),
            message="the BSUID-only statuses to find the reply",
        )
        chat = Chat.objects.get(channel=channel)
        assert (chat.pk, chat.customer_key, chat.customer_phone) == (reply.chat_id, bsuid, "")

        with_phone = text_message(CUSTOMER, "I am in Astana, centre", user_id=bsuid)
        assert (
            graph.deliver(
                envelope(
                    pnid, messages=[with_phone], contacts=[contact(CUSTOMER, "Aigerim", bsuid)]
                )
            )
            == 200
        )
        wait_for(lambda: graph.sent_to(CUSTOMER), message="the next reply, now at the phone")
    finally:
        graph.auto_statuses = False
    (same,) = Chat.objects.filter(channel=channel)
    assert (same.pk, same.customer_key, same.customer_bsuid) == (chat.pk, CUSTOMER, bsuid)
    assert Message.objects.filter(chat=same, direction="in").count() == 2


def test_failed_status_outside_the_24_hour_window_shows_on_the_reply(
    stack: str, pnid: str, graph: GraphApiEmulator
) -> None:
    _cloud_channel(graph, pnid)
    graph.fail_async(CUSTOMER, 131047)

    _customer_says(graph, pnid, "hello?")

    chat = _chat()
    reply = wait_for(lambda: Message.objects.filter(chat=chat, direction="out", status="failed").first(),
                     message="the failed status to be applied")  # fmt: skip
    assert reply.error_code == "131047"
    assert "24 hours" in reply.error_title or "Re-engagement" in reply.error_title


def test_bots_own_echo_through_a_bridge_leaves_the_owner_unchanged(stack: str) -> None:
    with BridgeEmulator(token="bridge-pipeline-token", echo_own_sends=True) as bridge:
        channel = factories.channel(kind=Channel.Kind.BRIDGE, bridge_url=bridge.base_url,
                                    bridge_token="bridge-pipeline-token", debounce_seconds=0.3)  # fmt: skip
        bridge.inbox_url = f"{stack}/webhooks/bridge/{channel.pk}/"
        jid = "77017654321@s.whatsapp.net"

        assert (
            bridge.post(bridge.event(jid, "Salem, is the oak table available?", sender_name="Dana"))
            == 200
        )

        (sent,) = wait_for(lambda: bridge.sent_to(jid), message="the bot's reply")
        chat = Chat.objects.get(channel=channel)
        wait_for(
            lambda: Message.objects.filter(
                chat=chat, provider_message_id=sent.id, status="sent"
            ).exists()
        )
        # The bridge echoed our own reply back as a from_me event: nothing changes.
        wait_for(
            lambda: bridge._threads and all(not t.is_alive() for t in bridge._threads),
            message="the echo",
        )
        wait_for(ingest_drained, message="the echo to be processed")
        chat.refresh_from_db()
        assert chat.owner == Owner.BOT
        assert not Message.objects.filter(chat=chat, author="phone").exists()

        # A message typed on the phone is different: the manager owns the chat now.
        assert bridge.post(bridge.event(jid, "I'll call you in 5 minutes", from_me=True)) == 200
        wait_for(lambda: Chat.objects.get(pk=chat.pk).owner == Owner.HUMAN, message="the takeover")


def test_sandbox_customer_gets_a_reviewable_reply(stack: str, client: Any) -> None:
    business = factories.business()
    channel = factories.channel(business, kind=Channel.Kind.SANDBOX, debounce_seconds=0.3)
    admin = factories.manager(business, role="admin")
    client.force_login(admin)

    answer = client.post(f"/inbox/sandbox/{channel.pk}/send/", {"text": "Do you have oak tables?"})

    assert answer.status_code == 302
    turn = wait_for(
        lambda: Turn.objects.filter(chat__channel=channel, outcome="answered").first(),
        message="the turn",
    )
    reply = turn.reply_message
    assert reply is not None
    page = client.get(f"/inbox/sandbox/{channel.pk}/").content.decode()
    assert "Do you have oak tables?" in page
    assert reply.text in page
    assert "Answered" in page  # the review line under the reply: outcome, action, backend
    assert "Language model (primary endpoint)" in page  # the backend, in the Why panel's words


def test_sandbox_of_another_business_is_not_reachable(client: Any) -> None:
    channel = factories.channel(kind=Channel.Kind.SANDBOX)
    outsider = factories.manager(factories.business())
    client.force_login(outsider)

    assert client.get(f"/inbox/sandbox/{channel.pk}/").status_code == 404
    assert client.post(f"/inbox/sandbox/{channel.pk}/send/", {"text": "hi"}).status_code == 404
    assert not Message.objects.exists()


def test_customer_photo_is_downloaded_kept_and_shown_only_to_the_business(
    stack: str, pnid: str, graph: GraphApiEmulator, client: Any
) -> None:
    channel = _cloud_channel(graph, pnid)
    photo = b"\xff\xd8\xff\xe0 fake jpeg bytes of a scratched table"
    sha = graph.add_media("3003383421387256", photo, "image/jpeg")
    message = media_message(CUSTOMER, "image", "3003383421387256", sha256=sha, mime="image/jpeg",
                            caption="Is this scratch covered by warranty?")  # fmt: skip

    assert graph.deliver(envelope(pnid, messages=[message], contacts=[contact(CUSTOMER)])) == 200

    stored = wait_for(lambda: Message.objects.filter(kind="image").exclude(media_file="").first(),
                      message="the photo to be kept")  # fmt: skip
    assert stored.text == "Is this scratch covered by warranty?"
    manager = factories.manager(channel.business)
    client.force_login(manager)
    answer = client.get(f"/inbox/media/{stored.pk}/")
    assert answer.status_code == 200
    assert answer.content == photo
    assert answer["Content-Type"] == "image/jpeg"
    client.force_login(factories.manager(factories.business()))
    assert client.get(f"/inbox/media/{stored.pk}/").status_code == 404


def test_a_reply_with_an_invented_price_is_blocked_and_the_chat_goes_to_a_human(
    stack: str, pnid: str, graph: GraphApiEmulator, llm: OpenAIEmulator
) -> None:
    channel = _cloud_channel(graph, pnid)
    from assistant.demo import ensure_demo_assistant

    ensure_demo_assistant(channel.business)  # a price list where nothing costs 17 500 KZT
    llm.script(Step.invented_price("17 500 KZT", "the oak dining table"))

    _customer_says(graph, pnid, "How much is the oak dining table today?")

    chat = _chat()
    (turn,) = wait_for(lambda: _finished_turns(chat.pk), message="the turn")
    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "guardrail")
    assert any("17 500" in finding for finding in turn.guardrail_findings)
    handoff = chat.handoffs.get()
    assert "17 500 KZT" in handoff.details["blocked_reply"]
    sent = [m.text for m in graph.sent_to(CUSTOMER)]
    assert len(sent) == 1
    assert "17 500" not in sent[0]  # the customer got the handoff notice, not the invented price
    chat.refresh_from_db()
    assert chat.owner == Owner.PENDING_HUMAN


def test_the_bot_answers_a_customer_who_returns_after_a_manager_resolved_the_chat(
    stack: str, pnid: str, graph: GraphApiEmulator, llm: OpenAIEmulator
) -> None:
    channel = _cloud_channel(graph, pnid)
    _customer_says(graph, pnid, "Can I speak to a person?")
    chat = _chat()
    wait_for(lambda: _finished_turns(chat.pk), message="the first turn")
    sent_before = len(wait_for(lambda: graph.sent_to(CUSTOMER), message="the first reply"))
    anna = factories.manager(channel.business, username="anna-resolves")
    assert actions.take_over(anna, chat.pk).changed

    assert status_actions.resolve(anna, chat.pk).changed
    chat.refresh_from_db()
    assert (chat.status, chat.owner, chat.assigned_to_id) == ("resolved", Owner.BOT, None)

    _customer_says(graph, pnid, "Thanks! And how much is delivery to Almaty?")
    wait_for(lambda: len(_finished_turns(chat.pk)) == 2, timeout=30, message="the second turn")
    assert _finished_turns(chat.pk)[-1].outcome == Turn.Outcome.ANSWERED
    replies = wait_for(
        lambda: len(graph.sent_to(CUSTOMER)) > sent_before and graph.sent_to(CUSTOMER)
    )
    assert len(replies) == sent_before + 1
    chat.refresh_from_db()
    assert (chat.status, chat.owner) == ("open", Owner.BOT)
    prompt = "\n".join(str(m.get("content")) for m in llm.chat_requests[-1].messages)
    assert "delivery to Almaty" in prompt
