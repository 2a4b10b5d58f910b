"""A websocket frame fuzzer: whatever a page (or a script with a manager's cookie) sends on
/ws/inbox/, the socket answers or ignores it and stays open, and no frame subscribes it to a
chat of another business."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.inbox.tenants import Tenant, tenant
from tests.inbox.web.test_live import connect

pytestmark = pytest.mark.django_db(transaction=True)

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)  # fmt: skip


def frames(chat_ids: list[int]) -> st.SearchStrategy[tuple[str, Any]]:
    """Text frames of any content (the test client sends no empty frame), JSON objects with real and odd actions and chat ids (this
    business's, another's, absurd ones), and binary frames."""
    chat = st.one_of(st.sampled_from(chat_ids), st.sampled_from([str(i) for i in chat_ids]),
                     st.integers(), json_value)  # fmt: skip
    action = st.one_of(st.sampled_from(["subscribe", "unsubscribe", "SUBSCRIBE", ""]), json_value)
    command = st.fixed_dictionaries({"action": action, "chat": chat}, optional={"x": json_value})
    return st.one_of(
        command.map(lambda c: ("json", c)),
        json_value.map(lambda v: ("json", v)),
        st.text(min_size=1, max_size=200).map(lambda t: ("text", t)),
        st.binary(min_size=1, max_size=64).map(lambda b: ("bytes", b)),
    )


@pytest_asyncio.fixture
async def sockets() -> AsyncIterator[list[WebsocketCommunicator]]:
    opened: list[WebsocketCommunicator] = []
    yield opened
    for communicator in opened:
        await communicator.disconnect()
    await sync_to_async(connections.close_all)()


@pytest.mark.asyncio
@pytest.mark.timeout(240)
async def test_fuzzed_frames_never_close_the_socket_nor_cross_businesses(
    sockets: list[WebsocketCommunicator],
) -> None:
    a: Tenant = await sync_to_async(tenant)("A")
    b: Tenant = await sync_to_async(tenant)("B")
    corpus: list[tuple[str, Any]] = []

    # The three answers the last assertion asks for, always in the corpus: 300 random frames
    # missed one of them about once in a few hundred runs (seen in a full suite run).
    @given(frame=frames([a.chat.pk, b.chat.pk]))
    @example(frame=("json", {"action": "subscribe", "chat": a.chat.pk}))
    @example(frame=("json", {"action": "subscribe", "chat": b.chat.pk}))
    @example(frame=("text", "{not json"))
    @settings(max_examples=300, database=None, suppress_health_check=list(HealthCheck))
    def collect(frame: tuple[str, Any]) -> None:
        corpus.append(frame)

    collect()
    page = await connect(a.manager)
    sockets.append(page)
    answers: list[str] = []
    for kind, frame in corpus:
        if kind == "bytes":
            await page.send_to(bytes_data=frame)
        elif kind == "text":
            await page.send_to(text_data=frame)
        else:
            await page.send_json_to(frame)
        # A probe after each frame: everything before its answer is an answer to the frame.
        await page.send_json_to({"action": "unsubscribe"})
        while (reply := await page.receive_json_from(timeout=5)) != {"type": "unsubscribed"}:
            assert reply["type"] in {"error", "subscribed"}, (frame, reply)
            answers.append(reply.get("error", reply["type"]))
            if reply["type"] == "subscribed":
                assert reply["chat"] == a.chat.pk, (frame, reply)  # never B's chat
    assert len(corpus) > 100
    # The corpus reached every answer: subscriptions, refusals of B's chat, broken frames.
    assert {"subscribed", "not_found", "bad_frame"} <= set(answers), set(answers)
