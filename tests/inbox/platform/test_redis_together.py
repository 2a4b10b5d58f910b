"""`redis.sent_together`: scripts that wait for the next round trip, as the ingest consumer's
batch sends its timers, acknowledgement and presence check together."""

from __future__ import annotations

import time

import pytest
import redis

from inbox.conversations import debounce, ingest
from inbox.conversations.events import InboundEvent
from inbox.conversations.ingest.worker import IngestWorker
from inbox.conversations.models import Channel, Message
from inbox.platform.redis import ScriptCall, get_redis, run, run_later, sent_together
from tests import factories

_SET = "return redis.call('SET', KEYS[1], ARGV[1])"
_GET = "return redis.call('GET', KEYS[1])"
_FAIL = "return redis.error_reply('broken on purpose')"


def test_a_script_waits_inside_the_block_and_goes_with_the_next_reply_read() -> None:
    client = get_redis()
    with sent_together():
        run_later(ScriptCall("set", _SET, ["greeting"], ["salem"]))
        assert client.get("greeting") is None  # not sent yet

        assert run(ScriptCall("get", _GET, ["greeting"], [])) == b"salem"


def _acknowledge_then_break() -> None:
    with sent_together():
        run_later(ScriptCall("set", _SET, ["acknowledged"], ["yes"]))
        raise RuntimeError("the batch after it broke")


def test_what_waits_is_sent_even_when_the_block_fails() -> None:
    with pytest.raises(RuntimeError, match="the batch after it broke"):
        _acknowledge_then_break()

    assert get_redis().get("acknowledged") == b"yes"


def test_a_robust_script_that_fails_does_not_stop_the_ones_after_it() -> None:
    with sent_together():
        run_later(ScriptCall("timers", _FAIL, ["t"], [], robust=True))
        run_later(ScriptCall("ack", _SET, ["acknowledged"], ["yes"]))

    assert get_redis().get("acknowledged") == b"yes"
    with pytest.raises(redis.ResponseError, match="broken on purpose"), sent_together():
        run_later(ScriptCall("ack", _FAIL, ["a"], []))


@pytest.mark.django_db(transaction=True)
def test_a_batch_after_redis_lost_its_scripts_is_stored_acknowledged_and_scheduled() -> None:
    channel = factories.channel(kind=Channel.Kind.CLOUD_API, debounce_seconds=4)
    client = get_redis()

    def burst(start: int) -> list[InboundEvent]:
        return [
            InboundEvent(
                channel_id=channel.pk,
                provider_message_id=f"wamid.{start + i}",
                chat_key=f"7701000000{i % 2}",
                from_me=False,
                kind="text",
                text=f"Is the blue sofa still in stock? ({start + i})",
                media=None,
                provider_ts=int(time.time()),
            )
            for i in range(4)
        ]

    worker = IngestWorker(name="forgetful", block_ms=10)
    ingest.enqueue(burst(0))
    assert worker.step() == 4
    client.script_flush()  # a Redis restarted without its script cache
    client.delete(debounce.DUE_KEY)
    ingest.enqueue(burst(10))

    assert worker.step() == 4

    assert Message.objects.count() == 8
    assert client.xpending(ingest.STREAM, ingest.GROUP)["pending"] == 0
    assert client.xlen(ingest.STREAM) == 0
    chats = set(Message.objects.values_list("chat_id", flat=True))
    assert {int(m) for m in client.zrange(debounce.DUE_KEY, 0, -1)} == chats
