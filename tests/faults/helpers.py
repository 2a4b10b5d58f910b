"""What every fault test needs: a stack of real processes, customers writing through the Graph API
emulator, and the invariants that must hold whatever broke (each message stored once, each
customer message answered once, nothing sent that has no row)."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from inbox.conversations.models import Channel, Chat, Message, Turn
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator, contact, envelope, text_message
from tests.processes import ALL_QUEUES, ProcessGroup

# Turn outcomes that put exactly one bot message on the wire.
SENDING_OUTCOMES = (Turn.Outcome.ANSWERED, Turn.Outcome.CLARIFIED, Turn.Outcome.HANDED_OFF)
_numbers = itertools.count(106540352250000)


def fresh_phone_number_id() -> str:
    """A business number no other test used (the webhook caches number → channel briefly)."""
    return str(next(_numbers))


def customer(n: int) -> str:
    return f"7701{n:07d}"


@dataclass
class Stack:
    """daphne(s) + the ingest consumer + Celery worker(s), on one env."""

    group: ProcessGroup
    prefix: str
    web: list[str] = field(default_factory=list)
    workers: list[str] = field(default_factory=list)
    restarts: int = 0
    concurrency: int = 2
    _watching: threading.Event | None = None

    def start(
        self, *, webs: int = 1, workers: int = 1, concurrency: int = 2, ingests: int = 1
    ) -> Stack:
        self.concurrency = concurrency
        for n in range(webs):
            self.web.append(self.group.start_daphne(f"{self.prefix}-web{n}"))
        for n in range(ingests):
            self.start_ingest(f"ingest{n}")
        for n in range(workers):
            self.workers.append(f"{self.prefix}-worker{n}")
            self.group.start_celery_worker(self.workers[-1], concurrency=concurrency)
        return self

    def supervise(self) -> None:
        """Restart a Celery worker that exits, as systemd (Restart=always) and compose (restart:
        unless-stopped) do in deploy/: kombu's Redis transport can crash a worker that holds
        reserved tasks when the broker connection drops (its tasks stay in Redis, unacked, and
        are restored after the visibility timeout)."""
        self._watching = watching = threading.Event()

        def watch() -> None:
            while not watching.is_set():
                for name in self.workers:
                    proc = self.group.procs.get(name)
                    if proc is not None and proc.poll() is not None and not watching.is_set():
                        self.restarts += 1
                        self.group.start_celery_worker(name, concurrency=self.concurrency)
                watching.wait(0.5)

        threading.Thread(target=watch, daemon=True).start()

    def stop(self) -> None:
        if self._watching is not None:
            self._watching.set()
        self.group.stop_all()

    def start_ingest(self, name: str = "ingest") -> None:
        self.group.start(
            f"{self.prefix}-{name}",
            [sys.executable, "manage.py", "ingest_worker", "--claim-idle-ms", "2000"],
        )


def stack_env(
    base: dict[str, str], graph: GraphApiEmulator, llm_url: str, **extra: str
) -> dict[str, str]:
    return {
        **base,
        "WHATSAPP_GRAPH_URL": graph.graph_url,
        "WHATSAPP_APP_SECRET": graph.app_secret,
        "LLM_BASE_URL": llm_url,
        "LLM_MODEL": "assistant",
        **extra,
    }


def cloud_channel(graph: GraphApiEmulator, **kwargs: Any) -> tuple[Channel, str]:
    pnid = fresh_phone_number_id()
    token = f"token-{pnid}"
    defaults: dict[str, Any] = {"debounce_seconds": 0.3}
    defaults.update(kwargs)
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id=pnid, access_token=token, **defaults
    )
    graph.register_number(pnid, token)
    return channel, pnid


def message_body(pnid: str, wa_id: str, text: str, **kw: Any) -> dict[str, Any]:
    return envelope(pnid, messages=[text_message(wa_id, text, **kw)], contacts=[contact(wa_id)])


def finished_turns(chat_id: int) -> list[Turn]:
    return list(
        Turn.objects.filter(chat_id=chat_id).exclude(outcome=Turn.Outcome.RUNNING).order_by("pk")
    )


def celery_idle(redis_client: Any) -> bool:
    """No task waiting, none reserved (kombu's unacked hash), no debounce timer pending."""
    if any(redis_client.llen(q) for q in ALL_QUEUES.split(",")):
        return False
    if redis_client.hlen("unacked"):
        return False
    return not any(True for _ in redis_client.scan_iter("debounce:*", count=1000))


def assert_each_message_stored_and_answered_once(
    graph: GraphApiEmulator, chats: list[Chat], expected_inbound: dict[int, int]
) -> dict[str, int]:
    """For every chat: its customer messages stored once; every bot message on the wire has its
    row and went out once; the turns that sent something cover disjoint message ranges (no
    customer message answered twice); and every customer message is answered (by the bot, or
    by handing the chat to a person). Returns totals for the report."""
    totals: dict[str, int] = defaultdict(int)
    for chat in chats:
        chat.refresh_from_db()
        inbound = list(
            Message.objects.filter(chat=chat, direction=Message.Direction.INBOUND).order_by("pk")
        )
        assert len(inbound) == expected_inbound[chat.pk], f"chat {chat.pk}: messages stored"
        assert len({m.provider_message_id for m in inbound}) == len(inbound)
        bot_rows = list(Message.objects.filter(chat=chat, author=Message.Author.BOT))
        on_wire = graph.sent_to(chat.customer_key)
        wamids = [m.wamid for m in on_wire]
        assert len(wamids) == len(set(wamids))
        assert sorted(wamids) == sorted(m.provider_message_id for m in bot_rows), (
            f"chat {chat.pk}: every bot row sent exactly once, nothing sent without a row"
        )
        sending = [t for t in finished_turns(chat.pk) if t.outcome in SENDING_OUTCOMES]
        assert len(sending) == len(bot_rows), f"chat {chat.pk}: one message per sending turn"
        ranges = sorted((t.first_message_id, t.last_message_id) for t in sending)
        for (_, previous_end), (start, _) in itertools.pairwise(ranges):
            assert start > previous_end, f"chat {chat.pk}: a message was answered twice"
        assert chat.answered_up_to >= inbound[-1].pk, f"chat {chat.pk}: a message unanswered"
        totals["messages"] += len(inbound)
        totals["replies"] += len(bot_rows)
        totals["turns"] += len(finished_turns(chat.pk))
    return dict(totals)


def deliver_until_accepted(
    graph: GraphApiEmulator, body: dict[str, Any], *, deadline_s: float = 60.0
) -> list[int]:
    """POST one signed webhook as the platform does: redeliver (with backoff) until it is
    answered 200. Returns every status seen (0 = no answer)."""
    import json

    import httpx

    from tests.emulators.graph_api import sign

    raw = json.dumps(body, ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json",
               "X-Hub-Signature-256": sign(graph.app_secret, raw)}  # fmt: skip
    statuses: list[int] = []
    delay, give_up = 0.1, time.monotonic() + deadline_s
    while time.monotonic() < give_up:
        try:
            status = httpx.post(graph.webhook_url, content=raw, headers=headers, timeout=10)
            statuses.append(status.status_code)
        except httpx.HTTPError:
            statuses.append(0)
        if statuses[-1] == 200:
            return statuses
        time.sleep(delay)  # the provider's retry backoff, not a wait for our own work
        delay = min(delay * 2, 2.0)
    return statuses
