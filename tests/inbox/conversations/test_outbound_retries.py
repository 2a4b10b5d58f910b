"""A bot reply's retries, through a real Celery worker and the Graph API emulator: the first try
happens where the reply is recorded, each next one is the `inbox.deliver_reply` task's Celery
retry with a countdown. Bounded attempts, Retry-After honoured (seconds or an HTTP date), the
owner checked before each retry, and what happens after the last one."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from inbox.conversations import ownership
from inbox.conversations.models import Channel, Chat, Message, Owner, Turn
from inbox.conversations.outbound import SEND_ATTEMPTS, SendOutcome, send_reply, settle_turn
from inbox.platform import http
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator
from tests.processes import ProcessGroup, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

PHONE_ID = "106540352242955"
CUSTOMER = "77011234567"


@pytest.fixture(scope="module")
def graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        yield emulator


@pytest.fixture(scope="module")
def worker(subprocess_env: dict[str, str], graph: GraphApiEmulator) -> Iterator[ProcessGroup]:
    group = ProcessGroup({**subprocess_env, "WHATSAPP_GRAPH_URL": graph.graph_url})
    group.start_celery_worker("outbound-retries")
    yield group
    group.stop_all()


@pytest.fixture
def chat(graph: GraphApiEmulator, worker: ProcessGroup, settings: object) -> Chat:
    graph.reset()
    graph.register_number(PHONE_ID, "tok-r")
    settings.WHATSAPP_GRAPH_URL = graph.graph_url  # type: ignore[attr-defined]
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id=PHONE_ID, access_token="tok-r"
    )
    return factories.chat(channel, customer_key=CUSTOMER, customer_phone=CUSTOMER)


def _reply(chat: Chat, text: str = "The oak table is 120 000 KZT.") -> SendOutcome:
    asked = factories.customer_message(chat, "price?")
    Chat.objects.filter(pk=chat.pk).update(version=chat.version + 1)
    return send_reply(chat.pk, text, generated_at_version=chat.version + 1, answered_up_to=asked.pk)


def _settled(message_id: int | None) -> Message | None:
    message = Message.objects.get(pk=message_id)
    return message if message.status != Message.Status.SENDING else None


def test_a_rate_limited_reply_is_sent_by_the_retry(chat: Chat, graph: GraphApiEmulator) -> None:
    graph.fail_next_sends(130429, times=1)

    outcome = _reply(chat)

    assert (outcome.sent, outcome.reason) == (False, "retrying")
    message = wait_for(lambda: _settled(outcome.message_id), message="the retry to settle")
    assert message.status == Message.Status.SENT
    (sent,) = graph.sent_to(CUSTOMER)
    assert message.provider_message_id == sent.wamid
    assert len(graph.send_times) == 2
    assert Chat.objects.get(pk=chat.pk).owner == Owner.BOT


def test_transient_errors_give_up_after_bounded_attempts_and_hand_the_chat_over(
    chat: Chat, graph: GraphApiEmulator
) -> None:
    # Retry-After 1: the turn below names its reply before the first retry.
    graph.fail_next_sends(131000, times=10, http_status=500, retry_after="1")
    turn = Turn.objects.create(chat=chat, first_message_id=1, last_message_id=1,
                               generated_at_version=1, outcome=Turn.Outcome.ANSWERED)  # fmt: skip

    outcome = _reply(chat)
    Turn.objects.filter(pk=turn.pk).update(reply_message_id=outcome.message_id)

    message = wait_for(lambda: _settled(outcome.message_id), message="the retries to give up")
    assert (message.status, message.error_code) == (Message.Status.FAILED, "131000")
    time.sleep(0.5)  # nothing more is tried after the last attempt
    assert len(graph.send_times) == SEND_ATTEMPTS == 3
    assert graph.sent == []
    chat.refresh_from_db()
    assert chat.owner == Owner.PENDING_HUMAN
    assert chat.transitions.get().reason == "send_failed"
    assert Turn.objects.get(pk=turn.pk).outcome == Turn.Outcome.SEND_FAILED


@pytest.mark.parametrize("as_date", [False, True])
def test_retry_after_is_honoured(chat: Chat, graph: GraphApiEmulator, as_date: bool) -> None:
    header = http.http_date(3) if as_date else "2"
    graph.fail_next_sends(130429, times=1, retry_after=header)

    outcome = _reply(chat)

    message = wait_for(lambda: _settled(outcome.message_id), message="the retry to settle")
    assert message.status == Message.Status.SENT
    first, second = graph.send_times
    assert second - first >= 1.9  # an HTTP date has whole seconds: 3 s ahead is at least 2


def test_a_manager_taking_over_cancels_the_retry(chat: Chat, graph: GraphApiEmulator) -> None:
    graph.fail_next_sends(130429, times=1, retry_after="2")

    outcome = _reply(chat)
    ownership.take_over(chat.pk, manager=factories.manager(chat.channel.business))

    message = wait_for(lambda: _settled(outcome.message_id), message="the retry to settle")
    assert (message.status, message.error_code) == (Message.Status.FAILED, "cancelled")
    assert len(graph.send_times) == 1  # checked before the retry: nothing more was sent
    chat.refresh_from_db()
    assert chat.owner == Owner.HUMAN  # the manager's: no handoff for a cancelled reply
    assert not chat.transitions.filter(reason="send_failed").exists()


def test_a_reply_settled_meanwhile_is_not_sent_again(chat: Chat, graph: GraphApiEmulator) -> None:
    """The upkeep marked it outcome unknown (its worker seemed dead): the retry sends nothing."""
    graph.fail_next_sends(130429, times=1, retry_after="1")

    outcome = _reply(chat)
    Message.objects.filter(pk=outcome.message_id).update(status=Message.Status.UNKNOWN)

    time.sleep(2.5)  # past the retry's countdown: what is checked is that nothing happens
    assert len(graph.send_times) == 1
    assert Message.objects.get(pk=outcome.message_id).status == Message.Status.UNKNOWN


def test_a_turn_saved_after_its_reply_failed_still_says_so(chat: Chat) -> None:
    """The retries can give up before the turn's row names its reply; the turn settles it."""
    failed = factories.customer_message(chat, "x")
    Message.objects.filter(pk=failed.pk).update(status=Message.Status.FAILED)
    turn = Turn.objects.create(chat=chat, first_message_id=1, last_message_id=1,
                               generated_at_version=1, outcome=Turn.Outcome.CLARIFIED,
                               reply_message=failed)  # fmt: skip

    settle_turn(turn.pk)

    assert Turn.objects.get(pk=turn.pk).outcome == Turn.Outcome.SEND_FAILED
