"""Fault 4: every webhook delivered three times, shuffled, from 20 concurrent clients — 2,000
customer messages across 200 chats — while managers take over some chats mid-run.

Invariants, whatever the interleaving: every message is stored once; each turn that sends puts
exactly one message on the wire and no two of them answer the same customer message; every
message is answered; and once a manager has taken a chat over, no bot message is created for it
(a reply committed just before the takeover may still be on its way; nothing newer is).
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from django.db.models import Max

from inbox.conversations import ownership
from inbox.conversations.models import Chat, ChatTransition, Message
from inbox.platform.redis import get_redis
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator, sign
from tests.emulators.openai_server import OpenAIEmulator
from tests.faults.helpers import (
    Stack,
    assert_each_message_stored_and_answered_once,
    celery_idle,
    cloud_channel,
    customer,
    message_body,
    stack_env,
)
from tests.processes import ProcessGroup, ingest_drained, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

CHATS, PER_CHAT, COPIES, CLIENTS, TAKEN_OVER = 200, 10, 3, 20, 20
# One ingest consumer stores ~20 messages/s here (docs/deploy.md): three share the stream.
INGESTS = 3


@pytest.fixture
def graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator(app_secret="load-secret") as emulator:
        yield emulator


@pytest.fixture
def llm() -> Iterator[OpenAIEmulator]:
    with OpenAIEmulator() as emulator:
        yield emulator


def _post_all(url: str, secret: str, bodies: list[dict[str, Any]], done: list[int]) -> None:
    """CLIENTS threads, each with a keep-alive connection, redelivering anything not 200."""
    work, lock = iter(bodies), threading.Lock()
    failures: list[int] = []

    def client() -> None:
        with httpx.Client(timeout=30) as http:
            while True:
                with lock:
                    body = next(work, None)
                if body is None:
                    return
                raw = json.dumps(body).encode()
                headers = {"X-Hub-Signature-256": sign(secret, raw),
                           "Content-Type": "application/json"}  # fmt: skip
                for _attempt in range(5):
                    status = http.post(url, content=raw, headers=headers).status_code
                    if status == 200:
                        break
                    failures.append(status)
                with lock:
                    done.append(status)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert done.count(200) == len(bodies)


def test_triple_shuffled_delivery_under_load_with_takeovers(
    subprocess_env: dict[str, str], graph: GraphApiEmulator, llm: OpenAIEmulator
) -> None:
    stack = Stack(ProcessGroup(stack_env(subprocess_env, graph, llm.base_url)), "load")
    try:
        stack.start(ingests=INGESTS)
        graph.webhook_url = f"{stack.web[0]}/webhooks/whatsapp/"
        channel, pnid = cloud_channel(graph, debounce_seconds=2.0)
        manager = factories.manager(channel.business)
        bodies = [
            message_body(pnid, customer(c), f"message {n} of customer {c}: how much is a chair?")
            for c, n in itertools.product(range(CHATS), range(PER_CHAT))
        ]
        deliveries = [body for body in bodies for _ in range(COPIES)]
        random.Random(8).shuffle(deliveries)

        started = time.monotonic()
        done: list[int] = []
        poster = threading.Thread(
            target=_post_all, args=(graph.webhook_url, graph.app_secret, deliveries, done)
        )
        poster.start()
        # A third of the way in, managers take some chats over.
        wait_for(lambda: len(done) >= len(deliveries) // 3, timeout=120, message="a third")
        taken: dict[int, datetime] = {}
        for chat in Chat.objects.filter(channel=channel).order_by("pk")[:TAKEN_OVER]:
            ownership.take_over(chat.pk, manager=manager)
            taken[chat.pk] = ChatTransition.objects.filter(chat=chat).latest("pk").at
        poster.join()
        posted = time.monotonic() - started

        wait_for(lambda: Message.objects.filter(channel=channel).filter(direction="in").count()
                 >= CHATS * PER_CHAT, timeout=180, message="every message stored")  # fmt: skip
        stored = time.monotonic() - started
        wait_for(ingest_drained, timeout=60, message="the ingest stream to drain")
        chats = list(Chat.objects.filter(channel=channel))
        assert len(chats) == CHATS
        bot_chats = [c for c in chats if c.pk not in taken]
        wait_for(lambda: _all_answered(bot_chats), timeout=180, message="every message answered")
        wait_for(lambda: celery_idle(get_redis()), timeout=60, message="celery to be idle")
        answered = time.monotonic() - started

        totals = assert_each_message_stored_and_answered_once(
            graph, bot_chats, {c.pk: PER_CHAT for c in bot_chats}
        )
        for chat in (c for c in chats if c.pk in taken):
            assert Message.objects.filter(chat=chat, direction="in").count() == PER_CHAT
            bot_rows = {
                m.provider_message_id: m for m in Message.objects.filter(chat=chat, author="bot")
            }
            assert all(m.created_at < taken[chat.pk] for m in bot_rows.values()), (
                f"chat {chat.pk}: a bot message created after the takeover"
            )
            sent = [s.wamid for s in graph.sent_to(chat.customer_key)]
            assert sorted(sent) == sorted(bot_rows), f"chat {chat.pk}: sent without a row"
            assert Chat.objects.get(pk=chat.pk).owner == "human"
    finally:
        stack.stop()
    print(
        f"\n[fault 4] {CHATS * PER_CHAT} messages x{COPIES} ({len(deliveries)} webhooks) from "
        f"{CLIENTS} clients: posted in {posted:.1f} s ({len(deliveries) / posted:.0f} webhooks/s), "
        f"all stored after {stored:.1f} s ({CHATS * PER_CHAT / stored:.0f} messages/s), all "
        f"answered after {answered:.1f} s ({INGESTS} ingest consumers); {totals['turns']} turns, {totals['replies']} replies "
        f"in {len(bot_chats)} bot chats; {len(taken)} chats taken over"
    )


def _all_answered(chats: list[Chat]) -> bool:
    last = dict(
        Message.objects.filter(chat__in=chats, direction="in")
        .order_by()
        .values_list("chat_id")
        .annotate(m=Max("id"))
        .values_list("chat_id", "m")
    )
    answered = dict(
        Chat.objects.filter(pk__in=[c.pk for c in chats]).values_list("pk", "answered_up_to")
    )
    return all(answered[c.pk] >= last.get(c.pk, 0) for c in chats)
