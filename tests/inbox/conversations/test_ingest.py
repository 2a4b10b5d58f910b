"""`ingest.accept`: what one event does to the conversation, run as the consumer runs it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import pytest

from inbox.conversations import debounce, ingest, outbound
from inbox.conversations.events import InboundEvent, MediaRef, StatusEvent
from inbox.conversations.ingest.worker import IngestWorker
from inbox.conversations.models import (
    Channel,
    Chat,
    ChatTransition,
    Message,
    Owner,
    OwnershipCause,
)
from inbox.platform.redis import get_redis
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)


def _event(channel: Channel, **overrides: object) -> InboundEvent:
    event = InboundEvent(
        channel_id=channel.pk,
        provider_message_id="wamid.1",
        chat_key="77011234567",
        from_me=False,
        kind="text",
        text="How much is the oak table?",
        media=None,
        provider_ts=int(time.time()),
        customer_name="Aigerim",
        customer_phone="77011234567",
    )
    return replace(event, **overrides)  # type: ignore[arg-type]


@pytest.fixture
def channel() -> Channel:
    return factories.channel(kind=Channel.Kind.CLOUD_API, debounce_seconds=4)


def test_customer_message_creates_the_chat_and_starts_the_debounce(channel: Channel) -> None:
    result = ingest.accept(_event(channel))

    assert result.outcome == "stored"
    chat = Chat.objects.get(pk=result.chat_id)
    assert (chat.customer_key, chat.customer_name, chat.customer_phone) == (
        "77011234567",
        "Aigerim",
        "77011234567",
    )
    assert (chat.owner, chat.version, chat.customer_messages) == (Owner.BOT, 1, 1)
    message = Message.objects.get(pk=result.message_id)
    assert (message.author, message.direction, message.text) == (
        "customer",
        "in",
        "How much is the oak table?",
    )
    assert get_redis().get(f"debounce:{chat.pk}") is not None  # a turn is scheduled


def test_the_same_event_twice_is_stored_once(channel: Channel) -> None:
    first = ingest.accept(_event(channel))
    second = ingest.accept(_event(channel))

    assert (first.outcome, second.outcome) == ("stored", "duplicate")
    assert Message.objects.count() == 1
    assert Chat.objects.get().version == 1


def test_phone_message_from_the_manager_takes_the_chat_over(channel: Channel) -> None:
    ingest.accept(_event(channel))

    result = ingest.accept(
        _event(channel, provider_message_id="3EB0AA", from_me=True, text="I'll call you")
    )

    chat = Chat.objects.get(pk=result.chat_id)
    assert chat.owner == Owner.HUMAN
    assert chat.last_manager_at is not None
    message = Message.objects.get(pk=result.message_id)
    assert (message.author, message.from_me, message.sent_by_bot) == ("phone", True, False)
    transition = ChatTransition.objects.get(chat=chat)
    assert (transition.cause, transition.actor_label) == (OwnershipCause.MANAGER_REPLIED, "phone")


def test_echo_of_the_bots_own_message_leaves_the_owner_alone(channel: Channel) -> None:
    result = ingest.accept(_event(channel))
    outbound.remember_bot_sent(result.chat_id, "3EB0BOT")  # type: ignore[arg-type]

    echo = ingest.accept(
        _event(
            channel, provider_message_id="3EB0BOT", from_me=True, text="The oak table is 120 000"
        )
    )

    assert echo.outcome == "duplicate"
    chat = Chat.objects.get(pk=result.chat_id)
    assert chat.owner == Owner.BOT
    assert not ChatTransition.objects.exists()


def test_bot_echo_is_recognised_from_the_row_when_redis_forgot(channel: Channel) -> None:
    result = ingest.accept(_event(channel))
    chat = Chat.objects.get(pk=result.chat_id)
    Message.objects.create(chat=chat, channel=channel, direction="out", author="bot", from_me=True,
                           sent_by_bot=True, text="hi", provider_message_id="3EB0ROW", status="sent")  # fmt: skip

    ingest.accept(_event(channel, provider_message_id="3EB0ROW", from_me=True, text="hi"))

    assert Chat.objects.get(pk=chat.pk).owner == Owner.BOT


def test_same_text_as_the_bot_from_the_phone_is_still_a_manager(channel: Channel) -> None:
    """Never compare text: managers copy bot phrases."""
    result = ingest.accept(_event(channel))
    outbound.remember_bot_sent(result.chat_id, "3EB0BOT")  # type: ignore[arg-type]

    ingest.accept(
        _event(
            channel, provider_message_id="3EB0MGR", from_me=True, text="The oak table is 120 000"
        )
    )

    assert Chat.objects.get(pk=result.chat_id).owner == Owner.HUMAN


def test_no_turn_is_scheduled_while_a_human_owns_the_chat(channel: Channel) -> None:
    chat = factories.chat(channel, customer_key="77011234567")
    Chat.objects.filter(pk=chat.pk).update(owner=Owner.HUMAN)

    ingest.accept(_event(channel))

    assert get_redis().get(f"debounce:{chat.pk}") is None
    assert Chat.objects.get(pk=chat.pk).customer_messages == 1


def test_voice_note_waits_for_its_transcript_before_any_turn(channel: Channel) -> None:
    media = MediaRef(
        ref="1908647269898587", mime_type="audio/ogg; codecs=opus", sha256="x=", voice=True
    )

    result = ingest.accept(_event(channel, kind="voice", text="", media=media))

    message = Message.objects.get(pk=result.message_id)
    assert (message.kind, message.media_ref, message.transcript_status) == (
        "voice",
        "1908647269898587",
        "pending",
    )
    assert get_redis().get(f"debounce:{result.chat_id}") is None


@pytest.mark.parametrize("kind", ["reaction", "sticker", "unsupported"])
def test_kinds_the_assistant_cannot_answer_do_not_start_a_turn(channel: Channel, kind: str) -> None:
    result = ingest.accept(_event(channel, kind=kind, text="👍" if kind == "reaction" else ""))

    assert Message.objects.get(pk=result.message_id).kind == kind
    assert get_redis().get(f"debounce:{result.chat_id}") is None


def test_edit_replaces_the_text_and_keeps_the_history(channel: Channel) -> None:
    original = ingest.accept(_event(channel, text="2 chairs"))

    edit = ingest.accept(
        _event(
            channel, provider_message_id="wamid.e", text="3 chairs", extra={"edit_of": "wamid.1"}
        )
    )

    assert (edit.outcome, edit.message_id) == ("edit", original.message_id)
    message = Message.objects.get(pk=original.message_id)
    assert message.text == "3 chairs"
    assert message.payload["edits"] == [{"previous_text": "2 chairs"}]
    assert Message.objects.count() == 1


def test_revoke_drops_the_content_but_keeps_the_row(channel: Channel) -> None:
    original = ingest.accept(_event(channel, text="my card number is ..."))

    ingest.accept(
        _event(
            channel,
            provider_message_id="wamid.r",
            kind="unsupported",
            text="",
            extra={"revoke_of": "wamid.1"},
        )
    )

    message = Message.objects.get(pk=original.message_id)
    assert (message.text, message.payload["revoked"]) == ("", True)


def test_event_of_an_inactive_channel_is_ignored(channel: Channel) -> None:
    Channel.objects.filter(pk=channel.pk).update(is_active=False)

    assert ingest.accept(_event(channel)).outcome == "ignored"
    assert not Message.objects.exists()


class TestStatuses:
    def _outbound(self, channel: Channel, wamid: str = "wamid.out1") -> Message:
        chat = factories.chat(channel)
        return Message.objects.create(chat=chat, channel=channel, direction="out", author="bot", from_me=True,
                                      sent_by_bot=True, text="hi", provider_message_id=wamid, status="sent")  # fmt: skip

    def _status(self, channel: Channel, status: str, **kw: object) -> StatusEvent:
        return StatusEvent(
            channel_id=channel.pk,
            provider_message_id="wamid.out1",
            status=status,  # type: ignore[arg-type]
            provider_ts=int(time.time()),
            **kw,
        )  # type: ignore[arg-type]

    def test_read_without_delivered_and_late_delivered_never_go_backwards(
        self, channel: Channel
    ) -> None:
        message = self._outbound(channel)

        ingest.accept(self._status(channel, "read"))
        ingest.accept(self._status(channel, "delivered"))

        message.refresh_from_db()
        assert message.status == "read"

    def test_failure_is_stored_with_its_error_code(self, channel: Channel) -> None:
        message = self._outbound(channel)

        ingest.accept(
            self._status(
                channel, "failed", error_code="131047", error_title="Re-engagement message"
            )
        )

        message.refresh_from_db()
        assert (message.status, message.error_code, message.error_title) == (
            "failed",
            "131047",
            "Re-engagement message",
        )

    def test_status_arriving_before_the_send_recorded_its_id_is_applied_later(
        self, channel: Channel
    ) -> None:
        early = ingest.accept(self._status(channel, "delivered"))
        assert early.outcome == "status_early"
        chat = factories.chat(channel)
        message = Message.objects.create(chat=chat, channel=channel, direction="out", author="bot", from_me=True,
                                         sent_by_bot=True, text="hi", status="sending")  # fmt: skip

        outbound._mark_sent(message, "wamid.out1")

        message.refresh_from_db()
        assert (message.provider_message_id, message.status) == ("wamid.out1", "delivered")


class TestConsumer:
    def test_queued_events_are_stored_and_acknowledged(self, channel: Channel) -> None:
        events = [_event(channel, provider_message_id=f"wamid.{i}", text=f"m{i}") for i in range(3)]
        assert ingest.enqueue(events + events[:1]) == ingest.EnqueueResult(3, 1)
        worker = IngestWorker(name="t1", block_ms=10)

        handled = worker.step()

        assert handled == 3
        assert list(Message.objects.values_list("text", flat=True)) == ["m0", "m1", "m2"]
        assert get_redis().xlen(ingest.STREAM) == 0
        assert get_redis().xpending(ingest.STREAM, ingest.GROUP)["pending"] == 0

    def test_entry_of_a_consumer_that_died_is_reclaimed_by_another(self, channel: Channel) -> None:
        ingest.enqueue([_event(channel)])
        dead = IngestWorker(name="dead", block_ms=10)
        from inbox.conversations.ingest.worker import ensure_group

        ensure_group(dead.redis)
        # It read the entry and died before accepting it.
        dead.redis.xreadgroup(ingest.GROUP, "dead", {ingest.STREAM: ">"}, count=10)
        survivor = IngestWorker(name="alive", block_ms=10, claim_idle_ms=0)

        survivor.step()

        assert Message.objects.count() == 1
        assert get_redis().xpending(ingest.STREAM, ingest.GROUP)["pending"] == 0

    def test_unreadable_entry_goes_to_the_dead_letter_stream(self, channel: Channel) -> None:
        from inbox.conversations.ingest.worker import ensure_group

        worker = IngestWorker(name="t2", block_ms=10)
        ensure_group(worker.redis)
        worker.redis.xadd(ingest.STREAM, {"e": b"{not json"})

        worker.step()

        assert worker.redis.xlen(ingest.DEAD_LETTER_STREAM) == 1
        assert worker.redis.xlen(ingest.STREAM) == 0


def test_debounce_token_is_current_only_for_the_newest_message(channel: Channel) -> None:
    chat = factories.chat(channel)
    first = debounce.schedule(chat.pk, delay=60)
    second = debounce.schedule(chat.pk, delay=60)

    assert not debounce.is_current(chat.pk, first)
    assert debounce.is_current(chat.pk, second)
    debounce.finish(chat.pk, first)  # a superseded turn finishing changes nothing
    assert debounce.is_current(chat.pk, second)
    debounce.finish(chat.pk, second)
    assert not debounce.is_current(chat.pk, second)


def test_a_failing_event_does_not_hold_back_the_rest_of_its_batch(channel: Channel) -> None:
    from django.db import connection

    if connection.vendor == "sqlite":
        pytest.skip("SQLite does not enforce column lengths; CI runs this on PostgreSQL")
    good_a = _event(channel, provider_message_id="wamid.a", chat_key="77010000001", text="a")
    broken = _event(channel, provider_message_id="wamid.x", chat_key="9" * 300, text="x")
    good_b = _event(channel, provider_message_id="wamid.b", chat_key="77010000002", text="b")
    ingest.enqueue([good_a, broken, good_b])
    worker = IngestWorker(name="batch", block_ms=10, max_attempts=2)

    assert worker.step() == 3

    assert sorted(Message.objects.values_list("text", flat=True)) == ["a", "b"]
    assert get_redis().xpending(ingest.STREAM, ingest.GROUP)["pending"] == 1  # left for a retry
    worker.claim_idle_ms = 0
    worker._last_claim = 0
    worker.step()  # second failure: out of attempts
    assert get_redis().xlen(ingest.DEAD_LETTER_STREAM) == 1
    assert get_redis().xpending(ingest.STREAM, ingest.GROUP)["pending"] == 0


class _FailsAtFirst:
    """A listener that fails the transaction of the message `text` the first `times` times."""

    def __init__(self, text: str, times: int) -> None:
        self.text, self.left = text, times

    def batch(self) -> object:
        from contextlib import nullcontext

        return nullcontext()

    def messages_received(self, items: list[tuple[Message, Chat]], *, business_id: int) -> None:
        if self.left and any(message.text == self.text for message, _chat in items):
            self.left -= 1
            raise RuntimeError("the CRM's database is away")

    def __getattr__(self, name: str) -> object:
        return lambda *args, **kwargs: None


def test_an_event_that_failed_once_and_then_was_stored_starts_afresh(channel: Channel) -> None:
    """Attempts are counted per stream entry until it is stored: a retry that succeeds clears
    its count, so a later failure of the same entry (replayed after a crash) is not its last."""
    from inbox.conversations import hooks
    from inbox.conversations.ingest.worker import FAILURES_KEY

    ingest.enqueue([_event(channel, provider_message_id="wamid.a", chat_key="77010000001",
                           text="flaky"),
                    _event(channel, provider_message_id="wamid.b", chat_key="77010000002",
                           text="fine")])  # fmt: skip
    flaky = _FailsAtFirst("flaky", times=2)  # the batch, then the event on its own
    hooks._listeners.append(flaky)  # type: ignore[arg-type]
    try:
        worker = IngestWorker(name="retry", block_ms=10, max_attempts=3)
        assert worker.step() == 2
        assert list(Message.objects.values_list("text", flat=True)) == ["fine"]
        assert len(get_redis().hgetall(FAILURES_KEY)) == 1  # one attempt counted

        worker.claim_idle_ms = 0
        worker._last_claim = 0
        worker.step()  # reclaimed: stored this time
    finally:
        hooks._listeners.remove(flaky)  # type: ignore[arg-type]

    assert sorted(Message.objects.values_list("text", flat=True)) == ["fine", "flaky"]
    assert get_redis().hgetall(FAILURES_KEY) == {}
    assert get_redis().xpending(ingest.STREAM, ingest.GROUP)["pending"] == 0
    assert get_redis().xlen(ingest.DEAD_LETTER_STREAM) == 0


def test_what_the_fast_json_reader_refuses_is_still_stored(channel: Channel) -> None:
    """A bridge's payload may carry what Python's JSON writes and orjson does not read or
    write (NaN, an integer beyond 64 bits): the message must still arrive, not go to the
    dead letters over the consumer's JSON library."""
    ingest.enqueue([
        _event(channel, provider_message_id="wamid.big", chat_key="77010000001",
               text="order 1", extra={"order_ref": 2**70, "balance": -(2**63) - 1}),
        _event(channel, provider_message_id="wamid.nan", chat_key="77010000002",
               text="rated", extra={"rating": float("nan")}),
    ])  # fmt: skip

    assert IngestWorker(name="json", block_ms=10).step() == 2

    stored = dict(Message.objects.values_list("text", "payload"))
    assert set(stored) == {"order 1", "rated"}
    assert stored["order 1"] == {"order_ref": 2**70, "balance": -(2**63) - 1}  # exactly
    assert stored["rated"] == {"rating": None}  # no JSON column takes NaN
    assert get_redis().xlen(ingest.DEAD_LETTER_STREAM) == 0


def test_a_chat_whose_turn_was_lost_is_resumed(channel: Channel) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from inbox.upkeep.tasks import resume_unanswered_chats

    waiting = ingest.accept(
        _event(channel, provider_message_id="wamid.lost", chat_key="77010000009")
    )
    answered = ingest.accept(
        _event(channel, provider_message_id="wamid.ok", chat_key="77010000008")
    )
    fresh = ingest.accept(_event(channel, provider_message_id="wamid.new", chat_key="77010000007"))
    three_minutes_ago = timezone.now() - timedelta(minutes=3)
    Chat.objects.filter(pk__in=[waiting.chat_id, answered.chat_id]).update(
        last_customer_at=three_minutes_ago
    )
    Chat.objects.filter(pk=answered.chat_id).update(answered_up_to=answered.message_id)
    get_redis().delete(f"debounce:{waiting.chat_id}")  # its turn task was lost

    assert resume_unanswered_chats() == 1

    token = get_redis().get(f"debounce:{waiting.chat_id}")
    assert token is not None  # a fresh turn is queued for the stuck chat only
    assert get_redis().get(f"debounce:{answered.chat_id}") is not None  # (its own, from accept)
    assert fresh.chat_id is not None


def test_a_turn_redis_could_not_schedule_is_scheduled_when_the_event_is_replayed(
    channel: Channel, settings: object
) -> None:
    from inbox.site.embedded_redis import free_port

    real = settings.REDIS_URL  # type: ignore[attr-defined]
    # Redis goes away between the commit and the debounce: the message is stored, no turn is
    # scheduled, and the consumer cannot acknowledge the entry, so it comes back.
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # type: ignore[attr-defined]
    ingest.accept(_event(channel))
    settings.REDIS_URL = real  # type: ignore[attr-defined]
    message = Message.objects.get()
    assert get_redis().get(f"debounce:{message.chat_id}") is None

    replayed = ingest.accept(_event(channel))

    assert replayed.outcome == "duplicate"
    assert Message.objects.count() == 1
    assert get_redis().get(f"debounce:{message.chat_id}") is not None
    # Once answered, a replay schedules nothing.
    get_redis().delete(f"debounce:{message.chat_id}")
    Chat.objects.filter(pk=message.chat_id).update(answered_up_to=message.pk)
    ingest.accept(_event(channel))
    assert get_redis().get(f"debounce:{message.chat_id}") is None


def test_nul_characters_from_a_customer_are_stored_not_dead_lettered(channel: Channel) -> None:
    """JSON allows \\u0000; PostgreSQL text and jsonb refuse it. The message must still arrive."""
    event = _event(channel, text="price\x00?", customer_name="Ai\x00gerim", extra={"note": "\x00"})

    result = ingest.accept(event)

    message = Message.objects.get(pk=result.message_id)
    assert message.text == "price\ufffd?"
    assert message.payload == {"note": "\ufffd"}
    assert message.chat.customer_name == "Ai\ufffdgerim"


def test_a_nul_in_an_attachments_name_does_not_lose_the_batch(channel: Channel) -> None:
    """A bridge sent a document whose file name holds a NUL, amid a batch of ordinary
    messages: all of them are stored, the name with U+FFFD."""
    document = MediaRef(ref="https://bridge.example/m/1", mime_type="application/pdf",
                        filename="invoice\x00.pdf")  # fmt: skip
    events = [
        _event(channel, provider_message_id="wamid.doc", kind="document", text="", media=document),
        *(_event(channel, provider_message_id=f"wamid.t{n}", chat_key=f"7701555000{n}")
          for n in range(3)),
    ]  # fmt: skip

    outcomes = ingest.accept_batch(events)

    assert [o.outcome for o in outcomes] == ["stored"] * 4
    stored = Message.objects.get(provider_message_id="wamid.doc")
    assert stored.media_filename == "invoice\ufffd.pdf"


def test_a_timestamp_too_far_in_the_future_is_stored_with_the_arrival_time(
    channel: Channel,
) -> None:
    """fromtimestamp(1e20) raised in the consumer: the message went to the dead letters."""
    result = ingest.accept(_event(channel, provider_ts=10**20))

    message = Message.objects.get(pk=result.message_id)
    assert message.provider_timestamp is not None
    assert abs(message.provider_timestamp.timestamp() - time.time()) < 300


class TestCrmHooksInABatch:
    """The consumer tells the Bitrix24 sync about new chats; a batch reads each business's sync
    settings once, not once per event."""

    def _batch(self, channel: Channel, chats: int, per_chat: int) -> list[InboundEvent]:
        return [
            _event(channel, provider_message_id=f"wamid.c{c}m{m}", chat_key=f"770100{c:05d}")
            for m in range(per_chat)
            for c in range(chats)
        ]

    def test_new_chats_of_a_synced_business_are_queued_for_the_crm(self, channel: Channel) -> None:
        from integrations.bitrix24.models import CrmLink
        from integrations.bitrix24.setup import config
        from tests.emulators.bitrix24 import Bitrix24Emulator

        with Bitrix24Emulator() as portal:
            config.configure(channel.business, webhook_url=portal.webhook_url)
            other = factories.channel(kind=Channel.Kind.CLOUD_API)  # a business without a sync
            ingest.enqueue(self._batch(channel, 3, 2) + self._batch(other, 2, 1))

            assert IngestWorker(name="crm", block_ms=10).step() == 8

        assert Chat.objects.count() == 5
        linked = CrmLink.objects.values_list("chat__channel_id", flat=True)
        assert sorted(linked) == [channel.pk] * 3

    def test_a_batch_reads_the_sync_settings_once(self, channel: Channel) -> None:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        ingest.enqueue(self._batch(channel, 10, 3))
        worker = IngestWorker(name="crm-once", block_ms=10)

        with CaptureQueriesContext(connection) as queries:
            assert worker.step() == 30

        settings_reads = [q for q in queries if "bitrix24_bitrix24settings" in q["sql"]]
        assert len(settings_reads) == 1
        assert Message.objects.count() == 30


_POISON_TRIGGER = {
    # An update of one message row fails: as a deadlock or a lost connection would, outside any
    # savepoint, which marks the consumer's whole batch transaction for rollback.
    "postgresql": [
        "CREATE FUNCTION poison() RETURNS trigger AS $$ BEGIN "
        "IF NEW.provider_message_id = 'wamid.poison' THEN RAISE EXCEPTION 'poisoned row'; END IF; "
        "RETURN NEW; END $$ LANGUAGE plpgsql",
        "CREATE TRIGGER poison BEFORE UPDATE ON inbox_message FOR EACH ROW EXECUTE FUNCTION poison()",
    ],
    "sqlite": [
        "CREATE TRIGGER poison BEFORE UPDATE ON inbox_message "
        "WHEN NEW.provider_message_id = 'wamid.poison' BEGIN SELECT RAISE(ABORT, 'poisoned row'); END",
    ],
}
_POISON_DROP = {
    "postgresql": [
        "DROP TRIGGER IF EXISTS poison ON inbox_message",
        "DROP FUNCTION IF EXISTS poison()",
    ],
    "sqlite": ["DROP TRIGGER IF EXISTS poison"],
}


def test_an_event_that_breaks_the_batch_transaction_loses_no_other_event(
    channel: Channel,
) -> None:
    from django.db import connection

    TestStatuses()._outbound(channel, wamid="wamid.poison")
    first = _event(channel, provider_message_id="wamid.in1", chat_key="77010000001", text="one")
    second = _event(channel, provider_message_id="wamid.in2", chat_key="77010000002", text="two")
    poisoned = StatusEvent(channel_id=channel.pk, provider_message_id="wamid.poison",
                           status="delivered", provider_ts=int(time.time()))  # fmt: skip
    ingest.enqueue([first, poisoned, second])
    with connection.cursor() as cursor:
        for sql in _POISON_TRIGGER[connection.vendor]:
            cursor.execute(sql)
    try:
        assert IngestWorker(name="poison", block_ms=10).step() == 3
    finally:
        with connection.cursor() as cursor:
            for sql in _POISON_DROP[connection.vendor]:
                cursor.execute(sql)

    assert sorted(Message.objects.filter(direction="in").values_list("text", flat=True)) == [
        "one",
        "two",
    ]
    assert get_redis().xpending(ingest.STREAM, ingest.GROUP)["pending"] == 1  # the status


# --- the batch path: what a batch stores is what its events one by one would store ----------


def _xadd_raw(events: Sequence[InboundEvent | StatusEvent]) -> None:
    """Entries straight onto the stream, past the webhook's dedup (a replay after a crash)."""
    from inbox.conversations.ingest.worker import ensure_group

    client = get_redis()
    ensure_group(client)
    for event in events:
        client.xadd(ingest.STREAM, {"e": event.to_json()})


def test_a_batch_of_many_chats_and_duplicates_stores_each_message_once(channel: Channel) -> None:
    ingest.accept(_event(channel, provider_message_id="wamid.0", chat_key="77010000000"))
    events = [
        _event(channel, provider_message_id=f"wamid.{i}", chat_key=f"7701000000{i % 7}", text=f"m{i}")
        for i in range(40)
    ]  # fmt: skip
    _xadd_raw(events + events[5:15])  # ten replays in the same batch, wamid.0 stored before
    worker = IngestWorker(name="many", block_ms=10)

    assert worker.step() == 50

    assert Message.objects.count() == 40
    assert Chat.objects.count() == 7
    for chat in Chat.objects.all():
        stored = Message.objects.filter(chat=chat).count()
        assert (chat.customer_messages, chat.version) == (stored, stored)
    assert get_redis().xlen(ingest.STREAM) == 0
    assert get_redis().xpending(ingest.STREAM, ingest.GROUP)["pending"] == 0


def _mixed_scenario(
    channel: Channel, ts: int
) -> tuple[list[InboundEvent | StatusEvent], dict[str, int]]:
    """A resolved chat with a bot reply out, and the events of one batch for it and others,
    stamped from `ts` on, a second apart (two scenarios compared must not straddle a
    clock second)."""
    from inbox.conversations import status

    resolved = ingest.accept(
        _event(channel, provider_ts=ts, provider_message_id="old", chat_key="77010000001")
    )
    assert resolved.chat_id is not None
    status.resolve(resolved.chat_id, manager=None)
    bot = Message.objects.create(chat_id=resolved.chat_id, channel=channel, direction="out", author="bot",
                                 from_me=True, sent_by_bot=True, text="hi", provider_message_id="bot.1",
                                 status="sent")  # fmt: skip
    outbound.remember_bot_sent(resolved.chat_id, "bot.1")
    events: list[InboundEvent | StatusEvent] = [
        _event(channel, provider_ts=ts + 1, provider_message_id="new.1", chat_key="77010000002", text="new chat"),
        _event(channel, provider_ts=ts + 2, provider_message_id="res.1", chat_key="77010000001", text="back again"),
        _event(channel, provider_ts=ts + 3, provider_message_id="bot.1", chat_key="77010000001", from_me=True, text="hi"),
        StatusEvent(channel_id=channel.pk, provider_message_id="bot.1", status="read",
                    provider_ts=ts + 4),
        _event(channel, provider_ts=ts + 5, provider_message_id="ph.1", chat_key="77010000003", text="hello"),
        _event(channel, provider_ts=ts + 6, provider_message_id="ph.2", chat_key="77010000003", from_me=True, text="On it"),
        _event(channel, provider_ts=ts + 7, provider_message_id="ph.3", chat_key="77010000003", text="thanks"),
        _event(channel, provider_ts=ts + 8, provider_message_id="new.2", chat_key="77010000002", text="again"),
    ]  # fmt: skip
    return events, {"bot": bot.pk}


def _conversation(channel: Channel) -> list[tuple[object, ...]]:
    """What a manager sees of the channel's chats (debounce timers included)."""
    out: list[tuple[object, ...]] = []
    for chat in Chat.objects.filter(channel=channel).order_by("customer_key"):
        texts = list(chat.messages.order_by("pk").values_list("text", "author", "status"))
        timer = get_redis().get(f"debounce:{chat.pk}") is not None
        out.append((chat.customer_key, chat.owner, chat.status, chat.version,
                    chat.customer_messages, chat.last_customer_at, texts, timer))  # fmt: skip
    return out


def test_a_mixed_batch_behaves_exactly_like_its_events_one_by_one(channel: Channel) -> None:
    other = factories.channel(kind=Channel.Kind.CLOUD_API, debounce_seconds=4)
    ts = int(time.time())
    one_by_one, _ = _mixed_scenario(other, ts)
    for event in one_by_one:
        ingest.accept(event)
    batched, _ = _mixed_scenario(channel, ts)

    outcomes = ingest.accept_batch(batched)

    assert [o.outcome for o in outcomes] == [
        "stored", "stored", "duplicate", "status", "stored", "stored", "stored", "stored",
    ]  # fmt: skip
    assert _conversation(channel) == _conversation(other)
    resolved = Chat.objects.get(channel=channel, customer_key="77010000001")
    assert resolved.status == "open"  # the customer wrote: reopened
    assert Chat.objects.get(channel=channel, customer_key="77010000003").owner == Owner.HUMAN


class _PoisonListener:
    """A listener that fails on one message (as any write in the transaction could)."""

    def batch(self) -> object:
        from contextlib import nullcontext

        return nullcontext()

    def __getattr__(self, name: str) -> object:
        return lambda *args, **kwargs: None

    def messages_received(self, items: list[tuple[Message, Chat]], *, business_id: int) -> None:
        if any(message.text == "poison" for message, _chat in items):
            raise RuntimeError("poisoned message")


def test_a_poisoned_message_in_a_batch_loses_none_of_its_neighbours(channel: Channel) -> None:
    from inbox.conversations import hooks

    events = [
        _event(channel, provider_message_id=f"wamid.{i}", chat_key=f"7701000000{i % 3}",
               text="poison" if i == 4 else f"m{i}")
        for i in range(9)
    ]  # fmt: skip
    ingest.enqueue(events)
    listener = _PoisonListener()
    hooks._listeners.append(listener)  # type: ignore[arg-type]
    try:
        assert IngestWorker(name="poisoned", block_ms=10).step() == 9
    finally:
        hooks._listeners.remove(listener)  # type: ignore[arg-type]

    stored = sorted(Message.objects.values_list("text", flat=True))
    assert stored == sorted(f"m{i}" for i in range(9) if i != 4)
    assert get_redis().xpending(ingest.STREAM, ingest.GROUP)["pending"] == 1  # left for a retry


def test_two_consumers_on_interleaved_chats_do_not_deadlock(
    channel: Channel, caplog: pytest.LogCaptureFixture
) -> None:
    import threading

    from django.db import connection

    if connection.vendor == "sqlite":
        pytest.skip("SQLite has one writer at a time; row locks are PostgreSQL's")
    # Every batch of each consumer touches every chat, in the stream's (shuffled) order.
    keys = [f"7701000{n:04d}" for n in range(20)]
    events = [
        _event(channel, provider_message_id=f"wamid.{i}", chat_key=keys[(i * 7) % 20], text=f"m{i}")
        for i in range(600)
    ]  # fmt: skip
    ingest.enqueue(events)
    from inbox.conversations.ingest.worker import ensure_group

    ensure_group(get_redis())
    errors: list[BaseException] = []

    def consume(name: str) -> None:
        from django.db import connections

        try:
            worker = IngestWorker(name=name, block_ms=10, batch=50)
            while worker.step():
                pass
        except BaseException as exc:  # reported by the test thread below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=consume, args=(f"c{n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert not errors
    assert Message.objects.count() == 600
    assert sum(Chat.objects.values_list("customer_messages", flat=True)) == 600
    assert "ingest.batch_failed" not in caplog.text  # no deadlock forced a rollback
    assert get_redis().xpending(ingest.STREAM, ingest.GROUP)["pending"] == 0


class _Recorder:
    """A listener that keeps what the consumer handed it."""

    def __init__(self) -> None:
        self.received: list[tuple[Message, Chat, int]] = []

    def batch(self) -> object:
        from contextlib import nullcontext

        return nullcontext()

    def __getattr__(self, name: str) -> object:
        return lambda *args, **kwargs: None

    def messages_received(self, items: list[tuple[Message, Chat]], *, business_id: int) -> None:
        self.received += [(message, chat, business_id) for message, chat in items]


def test_listeners_get_the_messages_and_chats_as_stored(channel: Channel) -> None:
    """The batch path builds the messages it hands to listeners (the dashboard renders them,
    the CRM sync files them) from what it inserted: every field must be what a read of the
    row gives, the times included."""
    from inbox.conversations import hooks

    factories.chat(channel, customer_key="77010000001", customer_name="Aigerim")
    events = [
        _event(channel, provider_message_id="wamid.a", chat_key="77010000001",
               text="сколько стоит доставка?", provider_ts=1_760_000_100),
        _event(channel, provider_message_id="wamid.b", chat_key="77010000002",
               kind="image", text="this one", extra={"caption": "oak"},
               media=MediaRef(ref="media-7", mime_type="image/jpeg", sha256="abc")),
        _event(channel, provider_message_id="wamid.c", chat_key="77010000001",
               kind="voice", text="", media=MediaRef(ref="media-8", mime_type="audio/ogg")),
    ]  # fmt: skip
    ingest.enqueue(events)
    recorder = _Recorder()
    hooks._listeners.append(recorder)  # type: ignore[arg-type]
    try:
        assert IngestWorker(name="recorder", block_ms=10).step() == 3
    finally:
        hooks._listeners.remove(recorder)  # type: ignore[arg-type]

    assert [m.provider_message_id for m, _c, _b in recorder.received] == [
        "wamid.a",
        "wamid.c",
        "wamid.b",
    ]  # in lock order: the chat of ...001 first, its messages in order
    fields = [f.attname for f in Message._meta.concrete_fields]
    for message, chat, business_id in recorder.received:
        stored = Message.objects.get(pk=message.pk)
        assert {f: getattr(message, f) for f in fields} == {f: getattr(stored, f) for f in fields}
        assert message.chat is chat
        assert chat.pk == stored.chat_id
        assert chat.channel.business_id == business_id == channel.business_id
        fresh = Chat.objects.get(pk=chat.pk)
        assert (chat.version, chat.customer_messages, chat.last_customer_at) == (
            fresh.version, fresh.customer_messages, fresh.last_customer_at
        )  # fmt: skip
    # Defaults made anew for each message are never shared between them.
    first, second = recorder.received[0][0], recorder.received[1][0]
    assert first.transcript_segments is not second.transcript_segments
