"""Scaling out: two daphne processes and two Celery workers (plus the ingest consumer) behind one
Redis and one PostgreSQL. Nothing may depend on which process handles what:

* dedup — the same webhook posted to both daphnes at once is stored once;
* debounce — a burst split across the two daphnes is one turn;
* limiter — at most LLM_MAX_IN_FLIGHT=1 model request at a time across every worker process;
* breaker — once failures through some workers opened it, every worker refuses at once;
* bot-sent ids — the echo of the bot's reply arriving on the other daphne is recognised;
* websockets — a page connected to daphne A receives what a task on a worker published.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.test import Client
from websockets.sync.client import connect as ws_connect

from inbox.conversations.models import Chat, Message, Owner, Turn
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator, contact, echo_message, envelope, sign
from tests.emulators.openai_server import OpenAIEmulator, Step
from tests.faults.helpers import (
    Stack,
    cloud_channel,
    customer,
    finished_turns,
    message_body,
    stack_env,
)
from tests.processes import LOG_DIR, ProcessGroup, ingest_drained, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

SHARED_STATE = {
    "LLM_MAX_IN_FLIGHT": "1",
    "LLM_ADMISSION_WAIT_SECONDS": "30",
    "LLM_BREAKER_FAILURES": "2",
    "LLM_BREAKER_COOLDOWN_SECONDS": "300",
    "LLM_MAX_RETRIES": "0",
    "LLM_TIMEOUT_SECONDS": "10",
    "LLM_CONNECT_TIMEOUT_SECONDS": "1",
}
_customers = itertools.count(500)


@pytest.fixture
def graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator(app_secret="scale-secret") as emulator:
        yield emulator


@pytest.fixture
def llm() -> Iterator[OpenAIEmulator]:
    emulator = OpenAIEmulator().start()
    yield emulator
    emulator.stop()


def _post(url: str, secret: str, body: dict[str, Any]) -> int:
    raw = json.dumps(body).encode()
    headers = {"X-Hub-Signature-256": sign(secret, raw), "Content-Type": "application/json"}
    return httpx.post(url, content=raw, headers=headers, timeout=10).status_code


def _log_sizes(names: list[str]) -> dict[str, int]:
    return {n: (LOG_DIR / f"{n}.log").stat().st_size if (LOG_DIR / f"{n}.log").exists() else 0
            for n in names}  # fmt: skip


def _worker_of(stack: Stack, chat_id: int, since: dict[str, int]) -> str:
    """Which worker ran the chat's turn, from what the workers logged in this test (JSON)."""
    for name in stack.workers:
        with open(LOG_DIR / f"{name}.log", "rb") as log:
            log.seek(since.get(name, 0))
            for line in log.read().decode(errors="replace").splitlines():
                if '"turn.finished"' in line and json.loads(line).get("chat_id") == chat_id:
                    return name
    return ""


class _Page:
    """A manager's inbox page: a real websocket to one daphne, collecting what it is pushed."""

    def __init__(self, base: str, user: Any, chat_id: int | None = None) -> None:
        client = Client()
        client.force_login(user)
        url = base.replace("http://", "ws://") + "/ws/inbox/"
        if chat_id is not None:
            url += f"?chat={chat_id}"
        self.socket = ws_connect(url, additional_headers={
            "Cookie": f"sessionid={client.cookies['sessionid'].value}",
            "Origin": "http://127.0.0.1"}, open_timeout=10).__enter__()  # fmt: skip
        self.events: list[dict[str, Any]] = []
        assert json.loads(self.socket.recv(timeout=10))["type"] == "hello"
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for raw in self.socket:
                self.events.append(json.loads(raw))
        except Exception:
            return

    def saw(self, event: str, chat_id: int) -> bool:
        return any(e.get("event") == event and e.get("chat") == chat_id for e in self.events)

    def close(self) -> None:
        self.socket.close()


def test_nothing_depends_on_a_single_process(
    subprocess_env: dict[str, str], graph: GraphApiEmulator, llm: OpenAIEmulator, settings: Any
) -> None:
    settings.LLM_BASE_URL = llm.base_url
    stack = Stack(ProcessGroup(stack_env(subprocess_env, graph, llm.base_url, **SHARED_STATE)),
                  "scale")  # fmt: skip
    page: _Page | None = None
    started = time.monotonic()
    since = _log_sizes(["scale-worker0", "scale-worker1"])
    try:
        stack.start(webs=2, workers=2, concurrency=2)
        web_a, web_b = (f"{base}/webhooks/whatsapp/" for base in stack.web)
        graph.webhook_url = web_a
        channel, pnid = cloud_channel(graph, debounce_seconds=1.5)
        manager = factories.manager(channel.business)
        page = _Page(stack.web[0], manager)  # a page on daphne A

        # Dedup: one webhook, both daphnes, at the same moment.
        first = customer(next(_customers))
        body = message_body(pnid, first, "Do you deliver to Astana?")
        statuses: list[int] = []
        posts = [threading.Thread(target=lambda url=url: statuses.append(
            _post(url, graph.app_secret, body))) for url in (web_a, web_b)]  # fmt: skip
        for post in posts:
            post.start()
        for post in posts:
            post.join()
        assert statuses == [200, 200]
        (reply,) = wait_for(lambda: graph.sent_to(first), timeout=30, message="the reply")
        chat = Chat.objects.get(channel=channel, customer_key=first)
        assert Message.objects.filter(chat=chat, direction="in").count() == 1
        # The page on daphne A saw the turn a worker ran and published.
        wait_for(lambda: page.saw("turn.done", chat.pk), timeout=15, message="turn.done on A")
        ran_on = wait_for(lambda: _worker_of(stack, chat.pk, since), message="the turn's log")

        # Bot-sent ids: the echo of the bot's reply comes back through daphne B.
        echo = echo_message("15550783881", first, reply.text, wamid=reply.wamid)
        assert _post(web_b, graph.app_secret,
                     envelope(pnid, echoes=[echo], contacts=[contact(first)])) == 200  # fmt: skip
        wait_for(ingest_drained, message="the echo to be processed")
        assert Chat.objects.get(pk=chat.pk).owner == Owner.BOT
        assert not Message.objects.filter(chat=chat, author="phone").exists()

        # Debounce: a burst split across the daphnes is one turn over all of it.
        burst = customer(next(_customers))
        for url, text in zip((web_a, web_b, web_a), ("hi", "the oak table", "price?"), strict=True):
            assert _post(url, graph.app_secret, message_body(pnid, burst, text)) == 200
        wait_for(lambda: graph.sent_to(burst), timeout=30, message="the burst's reply")
        burst_chat = Chat.objects.get(channel=channel, customer_key=burst)
        (turn,) = wait_for(lambda: finished_turns(burst_chat.pk), timeout=15)
        assert turn.outcome == Turn.Outcome.ANSWERED
        assert (turn.first_message_id, turn.last_message_id) == tuple(
            Message.objects.filter(chat=burst_chat, direction="in")
            .order_by("pk").values_list("pk", flat=True)[i] for i in (0, 2)
        )  # fmt: skip

        # Limiter: four chats at once; the model sees one request at a time.
        llm.requests.clear()
        llm.script(*[Step.slow(1.0)] * 4)
        four = [customer(next(_customers)) for _ in range(4)]
        for n, wa_id in enumerate(four):
            url = (web_a, web_b)[n % 2]
            assert _post(url, graph.app_secret, message_body(pnid, wa_id, "a chair?")) == 200
        wait_for(lambda: all(graph.sent_to(w) for w in four), timeout=60, message="4 replies")
        arrivals = sorted(r.at for r in llm.chat_requests)
        assert len(arrivals) == 4
        gaps = [b - a for a, b in itertools.pairwise(arrivals)]
        assert min(gaps) >= 0.9, gaps  # each waited for the one before to finish
        limiter_workers = {
            wait_for(
                lambda w=w: _worker_of(
                    stack, Chat.objects.get(channel=channel, customer_key=w).pk, since
                ),
                message="the turn's log",
            )
            for w in four
        }

        # Breaker: the model server goes away; two failures open the breaker for everyone.
        llm.stop()
        refused_by: set[str] = set()
        for _ in range(12):
            wa_id = customer(next(_customers))
            assert _post(web_b, graph.app_secret, message_body(pnid, wa_id, "hello?")) == 200
            wait_for(lambda wa_id=wa_id: graph.sent_to(wa_id), timeout=30, message="handoff")
            turn_chat = Chat.objects.get(channel=channel, customer_key=wa_id)
            (turn,) = wait_for(lambda c=turn_chat: finished_turns(c.pk), timeout=15)
            assert turn.reason == "model_unavailable"
            if "open or at its limit" in turn.model_error:  # refused without trying
                refused_by.add(
                    wait_for(lambda c=turn_chat: _worker_of(stack, c.pk, since), message="log")
                )
            if refused_by == set(stack.workers):
                break
        assert refused_by == set(stack.workers), refused_by
    finally:
        if page is not None:
            page.close()
        stack.stop()
    print(f"\n[scale-out] 2 daphne + 2 workers: first turn on {ran_on}, limiter turns on "
          f"{sorted(limiter_workers)}, gaps {[round(g, 2) for g in gaps]} s, breaker refusals "
          f"on {sorted(refused_by)}; {time.monotonic() - started:.1f} s")  # fmt: skip
