"""Fault 2: Redis restarted in the middle of traffic.

This test runs its own redis-server (append-only file on, as production must) on a free port;
the shared Redis is never touched. Webhooks that arrive while Redis is away are answered 503,
so the platform redelivers them; the ingest stream, the dedup keys, the debounce timers and the
Celery tasks are in the append-only file and survive the restart. Afterwards every message is
stored once and answered once, the platform's replay of the whole backlog is dropped as
duplicates, and a backlog of customer messages older than the late cutoff (the phone was
offline for two hours) goes to a person, not to the bot.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inbox.conversations.models import Chat, Message, Owner, Turn
from inbox.platform.redis import get_redis
from inbox.site.embedded_redis import free_port, start_redis, stop
from tests.emulators.graph_api import GraphApiEmulator
from tests.emulators.openai_server import OpenAIEmulator
from tests.faults.helpers import (
    Stack,
    assert_each_message_stored_and_answered_once,
    celery_idle,
    cloud_channel,
    customer,
    deliver_until_accepted,
    finished_turns,
    message_body,
    stack_env,
)
from tests.processes import ProcessGroup, ingest_drained, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

CHATS, PER_CHAT, CLIENTS = 20, 5, 5


@pytest.fixture
def graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator(app_secret="redis-restart-secret") as emulator:
        yield emulator


@pytest.fixture
def llm() -> Iterator[OpenAIEmulator]:
    with OpenAIEmulator() as emulator:
        yield emulator


@pytest.fixture
def own_redis(tmp_path: Path, settings: Any) -> Iterator[dict[str, Any]]:
    """A private redis-server with AOF; this test process talks to it too."""
    port, data = free_port(), tmp_path / "redis"
    state = {"port": port, "dir": data, "url": f"redis://127.0.0.1:{port}/0",
             "process": start_redis(port, data, persistent=True)}  # fmt: skip
    settings.REDIS_URL = state["url"]
    yield state
    stop(state["process"])


def test_redis_restart_mid_traffic_loses_nothing_and_answers_nothing_twice(
    subprocess_env: dict[str, str], graph: GraphApiEmulator, llm: OpenAIEmulator,
    own_redis: dict[str, Any],
) -> None:  # fmt: skip
    started = time.monotonic()
    env = stack_env(subprocess_env, graph, llm.base_url, REDIS_URL=own_redis["url"],
                    CELERY_VISIBILITY_TIMEOUT="10", CHANNEL_LAYER_PREFIX="fault-redis")  # fmt: skip
    stack = Stack(ProcessGroup(env), "redisrestart")
    try:
        stack.start()
        stack.supervise()
        graph.webhook_url = f"{stack.web[0]}/webhooks/whatsapp/"
        channel, pnid = cloud_channel(graph, debounce_seconds=0.5)
        bodies = [
            message_body(pnid, customer(c), f"question {n} from customer {c}")
            for n, c in itertools.product(range(PER_CHAT), range(CHATS))
        ]
        statuses: list[list[int]] = []
        work, lock = iter(bodies), threading.Lock()

        def client() -> None:
            while True:
                with lock:
                    body = next(work, None)
                if body is None:
                    return
                seen = deliver_until_accepted(graph, body)
                with lock:
                    statuses.append(seen)

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        wait_for(lambda: len(statuses) >= len(bodies) // 3, timeout=60, message="traffic")

        # Redis goes away (a restart: it writes its append-only file and exits)...
        stop(own_redis["process"])
        during = deliver_until_accepted(graph, bodies[0], deadline_s=0.5)
        assert set(during) == {503}, during
        # ...and comes back on the same port with the same data.
        own_redis["process"] = start_redis(own_redis["port"], own_redis["dir"], persistent=True)
        for thread in threads:
            thread.join(timeout=120)

        seen_statuses = {s for attempts in statuses for s in attempts}
        assert all(attempts[-1] == 200 for attempts in statuses)
        assert seen_statuses <= {200, 503}, seen_statuses  # never a 500: the platform retries
        # The platform replays everything once more (its backlog after our outage).
        for body in bodies:
            assert deliver_until_accepted(graph, body) == [200]
        # The phone was offline for two hours: its queued messages arrive late.
        two_hours_ago = int(time.time()) - 2 * 3600
        late = [customer(100 + n) for n in range(3)]
        for wa_id in late:
            body = message_body(pnid, wa_id, "are you open today?", ts=two_hours_ago)
            assert deliver_until_accepted(graph, body) == [200]

        chats = wait_for(
            lambda: (list(Chat.objects.filter(channel=channel)) if
                     Chat.objects.filter(channel=channel).count() == CHATS + len(late) else None),
            timeout=60, message="every chat",
        )  # fmt: skip
        wait_for(ingest_drained, timeout=60, message="the ingest stream to drain")
        wait_for(lambda: all(Chat.objects.get(pk=c.pk).answered_up_to >= _last_inbound(c)
                             for c in chats), timeout=90, message="every message answered")  # fmt: skip
        wait_for(lambda: celery_idle(get_redis()), timeout=60, message="celery to be idle")

        regular = [c for c in chats if c.customer_key not in late]
        totals = assert_each_message_stored_and_answered_once(
            graph, regular, {c.pk: PER_CHAT for c in regular}
        )
        for chat in (c for c in chats if c.customer_key in late):
            (turn,) = finished_turns(chat.pk)
            assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "late")
            assert Chat.objects.get(pk=chat.pk).owner == Owner.PENDING_HUMAN
        asked = " ".join(str(r.messages) for r in llm.chat_requests)
        assert "are you open today" not in asked  # the bot never saw the stale questions
        refused = sum(attempts.count(503) for attempts in statuses)
        assert not any(
            t.reason in ("model_error", "turn_failed") for t in finished_turns_of(regular)
        )
    finally:
        stack.stop()
    print(f"\n[fault 2] Redis restart: {totals['messages']} messages, {totals['turns']} turns, "
          f"{totals['replies']} replies, {refused} webhooks answered 503 and redelivered, "
          f"{stack.restarts} worker restarts, "
          f"{time.monotonic() - started:.1f} s")  # fmt: skip


def finished_turns_of(chats: list[Chat]) -> list[Turn]:
    return [turn for chat in chats for turn in finished_turns(chat.pk)]


def _last_inbound(chat: Chat) -> int:
    return (
        Message.objects.filter(chat=chat, direction=Message.Direction.INBOUND)
        .order_by("-pk")
        .values_list("pk", flat=True)
        .first()
        or 0
    )
