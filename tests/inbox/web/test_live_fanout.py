"""Fan-out that costs once per business: a batch's messages of one chat in one push, a batch's
pushes in one frame per page (each event still checked for that page), the rows of a batch read
in a few queries, nothing rendered while no inbox of the business is open (yet no page left
stale), one feed per business shared by a process's sockets, and none of it crossing
businesses."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from prometheus_client import REGISTRY

from inbox.conversations import hooks, ingest, online
from inbox.conversations.events import InboundEvent
from inbox.conversations.ingest.worker import IngestWorker
from inbox.conversations.models import Chat, Label, Membership, Message
from inbox.web.live import realtime
from tests import factories
from tests.inbox.tenants import Tenant
from tests.inbox.web.test_live import connect, customer_event, next_event

pytestmark = pytest.mark.django_db(transaction=True)


def store_batch(t: Tenant, texts: list[str]) -> None:
    """What the ingest consumer does with a batch: one transaction inside `hooks.batch()`."""
    store_events([customer_event(t, text) for text in texts])


def store_events(events: list[InboundEvent]) -> None:
    with hooks.batch(), transaction.atomic():
        for event in events:
            ingest.accept(event)


async def next_frame(communicator: WebsocketCommunicator) -> dict[str, Any]:
    """The next frame that carries events (presence frames skipped)."""
    while True:
        frame: dict[str, Any] = await communicator.receive_json_from(timeout=5)
        if frame["type"] in ("event", "skip", "batch"):
            return frame


def skipped() -> float:
    return REGISTRY.get_sample_value("inbox_dashboard_pushes_total", {"outcome": "skipped"}) or 0.0


@pytest.mark.asyncio
async def test_messages_of_one_chat_in_one_batch_arrive_as_one_push(
    a: Tenant, b: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    in_chat = await connect(a.manager, f"/ws/inbox/?chat={a.chat.pk}")
    page = await connect(a.manager)
    page_b = await connect(b.manager)
    sockets.extend([in_chat, page, page_b])
    texts = ["first", "second", "third", "fourth", "fifth"]

    await sync_to_async(store_batch)(a, texts)

    pushed = await next_event(in_chat, "message.changed")
    ids = [f["id"] for f in pushed["fragments"]]
    assert ids[0] == f"chat-row-{a.chat.pk}"
    assert len(pushed["data"]["message_ids"]) == 5, pushed
    assert ids[1:] == [f"msg-{mid}" for mid in pushed["data"]["message_ids"]]
    html = " ".join(f["html"] for f in pushed["fragments"])
    assert all(text in html for text in texts)
    listed = await next_event(page, "message.changed")
    assert listed["seq"] == pushed["seq"]
    assert [f["id"] for f in listed["fragments"]] == [f"chat-row-{a.chat.pk}"]
    assert "fifth" in listed["fragments"][0]["html"]  # the row shows the latest message
    # One push, not five: no other message push of the batch follows; B hears nothing of it.
    rest = []
    while not await in_chat.receive_nothing(timeout=0.5):
        rest.append(await in_chat.receive_json_from(timeout=1))
    assert all(m["type"] == "presence" for m in rest), rest  # who views the chat, no events
    assert await page_b.receive_nothing(timeout=0.2)
    events, current, complete = await sync_to_async(realtime.replay)(
        a.business.pk, pushed["seq"] - 1
    )
    assert complete
    assert current == pushed["seq"]
    assert len(events) == 1


def test_nothing_is_rendered_while_no_inbox_is_open_yet_pages_opened_later_are_current(
    a: Tenant, b: Tenant
) -> None:
    online.socket_open([b.business.pk], b.manager.pk, "b-socket")  # B's inbox is open
    before, start = skipped(), realtime.current_sequence(a.business.pk)
    b_start = realtime.current_sequence(b.business.pk)

    store_batch(a, ["asked while nobody watched", "and again"])

    assert skipped() == before + 1  # one chat's push, not rendered
    events, current, complete = realtime.replay(a.business.pk, start)
    assert events == []
    assert current == start + 1
    assert complete is False
    assert realtime.current_sequence(b.business.pk) == b_start
    # A page that slept through it re-renders (the log no longer reaches back) ...
    client = Client()
    client.force_login(a.manager)
    data = client.get(f"/inbox/events/?business={a.business.pk}&since={start}").json()
    assert data["reset"] is True
    # ... and a page opened now renders the change from the database.
    page = client.get(f"/inbox/chat/{a.chat.pk}/")
    assert page.status_code == 200
    assert "asked while nobody watched" in page.content.decode()


def test_a_consumer_batch_while_nobody_watches_skips_one_push_per_chat(
    a: Tenant, b: Tenant
) -> None:
    """The consumer's batch over three customers of A (one wrote twice) and one of B, with
    only B's inbox open: A's sequence moves by one per chat, none of it logged; B gets its
    push."""
    online.socket_open([b.business.pk], b.manager.pk, "b-socket")
    before, start = skipped(), realtime.current_sequence(a.business.pk)
    b_start = realtime.current_sequence(b.business.pk)
    events = [
        customer_event(a, "do you deliver on Sunday?", key="77010000201"),
        customer_event(b, "is the blue one in stock?"),
        customer_event(a, "how much for two?", key="77010000202"),
        customer_event(a, "and the price with delivery", key="77010000201"),
        customer_event(a, "hello, are you open today", key="77010000203"),
    ]

    with hooks.batch():
        outcomes = ingest.accept_batch(events)

    assert [o.outcome for o in outcomes] == ["stored"] * 5
    assert skipped() == before + 3  # three chats of A, each one push not rendered
    events_a, current, complete = realtime.replay(a.business.pk, start)
    assert (events_a, current, complete) == ([], start + 3, False)
    events_b, b_current, b_complete = realtime.replay(b.business.pk, b_start)
    assert b_complete
    assert b_current == b_start + 1
    assert "is the blue one in stock?" in str(events_b[0]["fragments"])


@pytest.mark.asyncio
async def test_a_dashboard_opened_after_skipped_pushes_gets_the_next_ones(
    a: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    await sync_to_async(store_batch)(a, ["nobody here"])
    page = await connect(a.manager)
    sockets.append(page)

    await sync_to_async(store_batch)(a, ["now someone is"])

    pushed = await next_event(page, "message.changed")
    assert "now someone is" in pushed["fragments"][0]["html"]
    assert pushed["seq"] == await sync_to_async(realtime.current_sequence)(a.business.pk)


@pytest.mark.asyncio
async def test_sockets_of_one_process_share_the_feed_and_one_leaving_stops_nobody_else(
    a: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    first = await connect(a.manager)
    second = await connect(a.admin)
    sockets.append(second)
    await sync_to_async(store_batch)(a, ["to both"])
    seqs = [(await next_event(s, "message.changed"))["seq"] for s in (first, second)]
    assert seqs[0] == seqs[1]

    await first.disconnect()
    await sync_to_async(store_batch)(a, ["to the one still open"])

    pushed = await next_event(second, "message.changed")
    assert pushed["seq"] == seqs[0] + 1
    assert "to the one still open" in pushed["fragments"][0]["html"]


@pytest.mark.asyncio
async def test_a_burst_reaches_a_page_complete_and_in_order(
    a: Tenant, b: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    page = await connect(a.manager)
    page_b = await connect(b.manager)
    sockets.extend([page, page_b])
    start = await sync_to_async(realtime.current_sequence)(a.business.pk)

    def burst() -> None:
        with realtime.batched():
            for n in range(40):
                realtime.publish(a.business.pk, "noop", {"n": n}, channel_id=a.channel.pk)

    await sync_to_async(burst)()

    # A page behind by a burst may get it as `batch` frames; either way all of it, in order.
    seqs: list[int] = []
    while len(seqs) < 40:
        frame = await page.receive_json_from(timeout=5)
        for event in frame["events"] if frame["type"] == "batch" else [frame]:
            assert event["business"] == a.business.pk
            seqs.append(event["seq"])
    assert seqs == list(range(start + 1, start + 41))
    assert await page_b.receive_nothing(timeout=0.3)


@pytest.mark.asyncio
async def test_a_batch_of_several_chats_reaches_each_page_as_one_frame_checked_per_event(
    a: Tenant, b: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    wholesale = await sync_to_async(factories.channel)(a.business, name="Wholesale")
    # The manager sees only the wholesale channel; the admin sees every channel of A.
    await sync_to_async(lambda: Membership.objects.get(user=a.manager).channels.add(wholesale))()
    restricted = await connect(a.manager)
    admin = await connect(a.admin)
    page_b = await connect(b.manager)
    sockets.extend([restricted, admin, page_b])
    start = await sync_to_async(realtime.current_sequence)(a.business.pk)
    events = [
        customer_event(a, "retail one", key="77010000101"),
        dataclasses.replace(customer_event(a, "wholesale one", key="77010000102"),
                            channel_id=wholesale.pk),
        customer_event(a, "retail two", key="77010000103"),
    ]  # fmt: skip

    await sync_to_async(store_events)(events)

    seqs = list(range(start + 1, start + 4))
    frame = await next_frame(admin)
    assert frame["type"] == "batch"
    assert [e["seq"] for e in frame["events"]] == seqs
    assert all(e["event"] == "message.changed" for e in frame["events"])
    assert all(f["scope"] == "list" for e in frame["events"] for f in e["fragments"])
    texts = [e["fragments"][0]["html"] for e in frame["events"]]
    for text in ("retail one", "wholesale one", "retail two"):
        assert any(text in html for html in texts), text
    # The restricted page gets the same one frame, with only the numbers of what it may not see.
    frame = await next_frame(restricted)
    assert frame["type"] == "batch"
    assert [e["seq"] for e in frame["events"]] == seqs
    shown = [e for e in frame["events"] if e["type"] == "event"]
    assert len(shown) == 1
    assert "wholesale one" in shown[0]["fragments"][0]["html"]
    assert [set(e) for e in frame["events"] if e["type"] == "skip"] == [
        {"type", "seq", "business"}
    ] * 2
    assert "retail" not in str(frame)
    assert await admin.receive_nothing(timeout=0.3)  # one frame, nothing after it
    assert await page_b.receive_nothing(timeout=0.2)
    # Each event is numbered and logged on its own, as a page that missed the frame replays it.
    logged, current, complete = await sync_to_async(realtime.replay)(a.business.pk, start)
    assert complete
    assert [e["seq"] for e in logged] == seqs
    assert current == seqs[-1]


def test_rows_of_a_batch_show_labels_and_masking_read_once_per_batch(a: Tenant) -> None:
    a.business.mask_phone_for_managers = True
    a.business.save()
    label = Label.objects.create(business=a.business, name="VIP")
    keys = [f"7701555{n:04d}" for n in range(6)]
    chats = [factories.chat(a.channel, customer_key=k, customer_name="", customer_phone=k)
             for k in keys]  # fmt: skip
    label.chats.add(chats[0])
    online.socket_open([a.business.pk], a.manager.pk, "a-socket")  # A's inbox is open
    start = realtime.current_sequence(a.business.pk)

    with CaptureQueriesContext(connection) as queries:
        store_events([customer_event(a, f"question {n}", key=k) for n, k in enumerate(keys)])

    logged, _current, complete = realtime.replay(a.business.pk, start)
    assert complete
    rows = {e["chat_id"]: e["fragments"][0]["html"] for e in logged}
    assert len(rows) == 6
    assert f'data-labels="{label.pk}"' in rows[chats[0].pk]
    assert 'data-labels=""' in rows[chats[1].pk]
    assert all(k not in rows[c.pk] for k, c in zip(keys, chats, strict=True))  # masked
    # The labels and the business's settings were read once for the batch, not once per row.
    sql = [q["sql"] for q in queries.captured_queries]
    assert sum('FROM "inbox_label"' in q for q in sql) == 1, sql
    assert sum('"inbox_business"."mask_phone_for_managers"' in q for q in sql) == 1, sql


@pytest.fixture
def webhook_during_store(a: Tenant) -> Any:
    """A listener that enqueues one more customer message while the consumer stores its first
    batch: a webhook of the same burst arriving after the consumer's read."""
    later = customer_event(a, "arrived while the first was stored", key="77010000202")

    class Arrives(hooks.Listener):
        sent = False

        def messages_received(
            self, items: Sequence[tuple[Message, Chat]], *, business_id: int
        ) -> None:
            if not self.sent:
                self.sent = True
                ingest.enqueue([later])

    listener = Arrives()
    hooks._listeners.append(listener)
    yield later
    hooks._listeners.remove(listener)


@pytest.mark.asyncio
async def test_what_arrives_while_a_batch_is_stored_is_pushed_with_it(
    a: Tenant, webhook_during_store: InboundEvent, sockets: list[WebsocketCommunicator]
) -> None:
    page = await connect(a.manager)
    sockets.append(page)
    await sync_to_async(ingest.enqueue)([customer_event(a, "first of a burst", key="77010000201")])
    worker = IngestWorker(name="coalesce", block_ms=10, coalesce_ms=5000)

    handled = await sync_to_async(worker.step)()

    assert handled == 2  # two reads, two transactions, one push
    frame = await next_frame(page)
    assert frame["type"] == "batch"
    html = " ".join(e["fragments"][0]["html"] for e in frame["events"])
    assert "first of a burst" in html
    assert "arrived while the first was stored" in html
    assert frame["events"][1]["seq"] == frame["events"][0]["seq"] + 1
    assert (
        await sync_to_async(lambda: Message.objects.filter(chat__channel=a.channel).count())() == 3
    )
