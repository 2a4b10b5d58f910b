"""A WAHA channel end to end with real processes: the webhook server, the ingest consumer, a
Celery worker running turns, and the WAHA and OpenAI-compatible emulators over HTTP. WAHA
posts as it does (signed, `message` and `message.any`, the echo of each API send), the bot
answers through `/api/sendText`."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import pytest

from inbox.conversations.models import Alert, Channel, Chat, Message, Owner, Turn
from tests import factories
from tests.emulators.openai_server import OpenAIEmulator
from tests.emulators.waha import WahaEmulator, new_id
from tests.processes import ProcessGroup, ingest_drained, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

KEY = "waha-pipeline-key"
_customers = iter(range(77019000000, 77019001000))


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAIEmulator]:
    with OpenAIEmulator() as emulator:
        yield emulator


@pytest.fixture(scope="module")
def stack(subprocess_env: dict[str, str], llm: OpenAIEmulator) -> Iterator[str]:
    env = {**subprocess_env, "LLM_BASE_URL": llm.base_url, "LLM_MODEL": "assistant"}
    group = ProcessGroup(env)
    hooks = group.start_webhook_server("waha-webhooks")
    group.start(
        "waha-ingest", [sys.executable, "manage.py", "ingest_worker", "--claim-idle-ms", "2000"]
    )
    group.start_celery_worker("waha-worker")
    yield hooks
    group.stop_all()


@pytest.fixture
def waha(stack: str, llm: OpenAIEmulator) -> Iterator[WahaEmulator]:
    llm.clear_script()
    llm.requests.clear()
    with WahaEmulator(api_key=KEY) as emulator:
        channel = factories.channel(kind=Channel.Kind.WAHA, bridge_url=emulator.base_url,
                                    bridge_token=KEY, gateway_instance="default",
                                    debounce_seconds=0.3)  # fmt: skip
        emulator.inbox_url = f"{stack}/webhooks/waha/{channel.pk}/"
        yield emulator


def _customer() -> str:
    return f"{next(_customers)}@c.us"


def _chat(customer: str) -> Chat:
    return wait_for(lambda: Chat.objects.filter(customer_key=customer).first(), message="the chat")


def _turns(chat: Chat) -> list[Turn]:
    return list(Turn.objects.filter(chat=chat).exclude(outcome=Turn.Outcome.RUNNING))


def test_customer_text_is_answered_once_and_our_echo_is_no_takeover(waha: WahaEmulator) -> None:
    customer = _customer()
    payload = waha.message(customer, "Salem, is the oak table available?")

    # WAHA posts the message twice (message and message.any), and redelivers once.
    assert [waha.post(event, payload) for event in ("message", "message.any", "message")] == [
        200
    ] * 3

    (sent,) = wait_for(lambda: waha.sent_to(customer), message="the bot's reply")
    chat = _chat(customer)
    reply = wait_for(lambda: Message.objects.filter(chat=chat, provider_message_id=sent.id,
                                                    status="sent").first())  # fmt: skip
    waha.settle()  # the echo of the reply (GOWS: no `source`) is posted
    wait_for(ingest_drained, message="the echo to be processed")
    chat.refresh_from_db()
    assert chat.owner == Owner.BOT
    assert Message.objects.filter(chat=chat, direction="in").count() == 1
    assert not Message.objects.filter(chat=chat, author="phone").exists()
    assert reply.sent_by_bot

    # Its acks reach the reply.
    assert waha.post("message.ack", waha.ack(sent.id, customer, 3)) == 200
    wait_for(lambda: Message.objects.get(pk=reply.pk).status == "read", message="the read ack")


def test_an_echo_that_beats_the_send_answer_is_still_ours(waha: WahaEmulator) -> None:
    """WAHA posts the echo of an API send before the send's HTTP answer reaches us (GOWS gives
    no `source`): the inbox does not know the id yet, and must not take the echo for a manager
    typing on the phone."""
    waha.answer_delay = 1.5
    customer = _customer()

    waha.post("message", waha.message(customer, "Is the oak table available?"))

    (sent,) = wait_for(lambda: waha.sent_to(customer), message="the bot's reply")
    chat = _chat(customer)
    wait_for(lambda: Message.objects.filter(chat=chat, provider_message_id=sent.id,
                                            status="sent").exists())  # fmt: skip
    waha.settle()
    wait_for(ingest_drained, message="the echo to be processed")
    chat.refresh_from_db()
    assert chat.owner == Owner.BOT
    assert not Message.objects.filter(chat=chat, author="phone").exists()


def test_a_message_typed_on_the_phone_takes_the_chat_and_the_bot_stays_silent(
    waha: WahaEmulator,
) -> None:
    customer = _customer()
    waha.post("message", waha.message(customer, "Do you deliver to Astana?"))
    wait_for(lambda: waha.sent_to(customer), message="the bot's first reply")
    chat = _chat(customer)

    phone = waha.message(customer, "I'll call you in 5 minutes", from_me=True, source="app")
    assert waha.post("message.any", phone) == 200
    wait_for(lambda: Chat.objects.get(pk=chat.pk).owner == Owner.HUMAN, message="the takeover")

    waha.post("message", waha.message(customer, "ok, waiting"))
    wait_for(lambda: Message.objects.filter(chat=chat, text="ok, waiting").exists())
    wait_for(ingest_drained)
    time.sleep(1.0)  # the debounce window (0.3 s) has passed: a reply would be on its way
    assert len(waha.sent_to(customer)) == 1


def test_a_reconnect_replaying_200_old_messages_stores_them_once_and_the_bot_never_answers(
    waha: WahaEmulator, llm: OpenAIEmulator
) -> None:
    customers = [_customer() for _ in range(4)]
    old = int(time.time()) - 3 * 3600
    history = [waha.message(customers[n % 4], f"old message {n}", id=new_id(), ts=old + n)
               for n in range(200)]  # fmt: skip
    assert waha.set_status("WORKING") == 200

    for copy in range(2):  # the engine replays the backlog, and then some of it again
        for payload in history[: 200 if copy == 0 else 50]:
            assert waha.post("message", payload) == 200

    wait_for(lambda: Message.objects.filter(chat__customer_key__in=customers).count() >= 200,
             timeout=60, message="the history")  # fmt: skip
    wait_for(ingest_drained, timeout=30)
    assert Message.objects.filter(chat__customer_key__in=customers, direction="in").count() == 200
    for customer in customers:
        chat = _chat(customer)
        turns = wait_for(lambda chat=chat: _turns(chat), message="the late turn")
        assert Turn.Outcome.ANSWERED not in {turn.outcome for turn in turns}
        assert (Turn.Outcome.HANDED_OFF, "late") in {(t.outcome, t.reason) for t in turns}
    assert llm.chat_requests == []  # the model never answered three-hour-old messages
    assert len(waha.sent) <= len(customers)  # at most each chat's "a person will answer"


def test_gateway_down_while_replying_is_retried_then_shown_as_failed(waha: WahaEmulator) -> None:
    waha.fail_sends_with = 503
    customer = _customer()

    waha.post("message", waha.message(customer, "How much is the oak chair?"))

    chat = _chat(customer)
    failed = wait_for(lambda: Message.objects.filter(chat=chat, direction="out", status="failed").first(),
                      timeout=90, message="the reply to fail")  # fmt: skip
    assert waha.send_attempts >= 3  # tried, retried, then given up
    assert failed.error_code == "503"


def test_the_phone_unlinked_mid_conversation_alerts_at_once_and_the_reply_fails_visibly(
    waha: WahaEmulator,
) -> None:
    customer = _customer()
    waha.post("message", waha.message(customer, "hello"))
    wait_for(lambda: waha.sent_to(customer), message="the first reply")

    assert waha.set_status("SCAN_QR_CODE") == 200
    alert = Alert.objects.get(kind=Alert.Kind.CHANNEL_SILENT, resolved_at=None)
    assert "SCAN_QR_CODE" in alert.message

    waha.post("message", waha.message(customer, "are you there?"))
    chat = _chat(customer)
    failed = wait_for(lambda: Message.objects.filter(chat=chat, direction="out", status="failed").first(),
                      timeout=30, message="the reply to fail")  # fmt: skip
    assert failed.error_code == "session_scan_qr_code"
