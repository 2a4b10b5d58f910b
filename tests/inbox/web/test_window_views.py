"""WhatsApp's customer-service window where managers meet it: the chat header's time left, the
reply box locked past it (notes still work), the JSON API's `window_closes_at` and its 409."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from inbox.conversations import ingest, window
from inbox.conversations.events import InboundEvent
from inbox.conversations.models import Channel, Chat, Message, Owner
from inbox.web import fragments
from inbox.web.api_tokens import create_token
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator
from tests.inbox.conversations.test_manager_attachments import PNG
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        yield emulator


def _cloud_chat(a: Tenant, graph: GraphApiEmulator, *, wrote_hours_ago: float) -> Chat:
    channel = factories.channel(
        a.business, kind=Channel.Kind.CLOUD_API, phone_number_id="106540352242555",
        access_token="tok-w",
    )  # fmt: skip
    graph.register_number("106540352242555", "tok-w")
    written = timezone.now() - timedelta(hours=wrote_hours_ago)
    chat = factories.chat(
        channel,
        customer_phone="77015550001",
        customer_key="77015550001",
        last_customer_at=written,
        window_closes_at=written + window.WINDOW,
    )
    factories.customer_message(chat, "Do you deliver?", provider_timestamp=written)
    return chat


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _api_post(user: Any, path: str, body: dict[str, Any]) -> Any:
    _, token = create_token(user, "tests")
    return Client().post(
        f"/api/v1{path}", body, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip


def _api_get(user: Any, path: str) -> Any:
    _, token = create_token(user, "tests")
    return Client().get(f"/api/v1{path}", HTTP_AUTHORIZATION=f"Bearer {token}")


class TestInbox:
    def test_the_header_shows_the_time_left_and_the_reply_box_is_open(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _cloud_chat(a, graph, wrote_hours_ago=20.5)

        page = _client(a.manager).get(f"/inbox/chat/{chat.pk}/").content.decode()

        header = page[page.index(f'id="chat-header-{chat.pk}"') :]
        assert "Window closes in 3 h" in header[: header.index("</header>")]
        composer = page[page.index(f'id="composer-{chat.pk}"') :]
        assert "data-window-lockable>" in composer  # not disabled
        assert "data-window-locked hidden" in composer

    def test_past_the_window_the_reply_is_refused_with_the_reason_and_notes_still_work(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _cloud_chat(a, graph, wrote_hours_ago=25)
        client = _client(a.manager)

        page = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
        assert "WhatsApp window closed: template only" in page
        assert "data-window-lockable disabled" in page

        refused = client.post(
            f"/inbox/chat/{chat.pk}/reply/", {"text": "We deliver tomorrow", "key": "k1"},
            HTTP_HX_REQUEST="true",
        ).content.decode()  # fmt: skip
        assert "only an approved template can be sent to this customer now" in refused
        assert "data-window-lockable disabled" in refused
        assert graph.sent_to("77015550001") == []
        assert not chat.messages.filter(author=Message.Author.MANAGER).exists()
        assert Chat.objects.get(pk=chat.pk).owner == Owner.BOT

        client.post(
            f"/inbox/chat/{chat.pk}/note/", {"text": "Call them instead", "key": "n1"},
            HTTP_HX_REQUEST="true",
        )  # fmt: skip
        assert chat.messages.filter(direction=Message.Direction.INTERNAL).count() == 1

    def test_past_the_window_a_file_is_refused_too(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _cloud_chat(a, graph, wrote_hours_ago=25)
        upload = SimpleUploadedFile("table.png", PNG, content_type="image/png")

        refused = _client(a.manager).post(
            f"/inbox/chat/{chat.pk}/reply/", {"attachment": upload, "key": "f1"},
            HTTP_HX_REQUEST="true",
        ).content.decode()  # fmt: skip

        assert "only an approved template can be sent to this customer now" in refused
        assert graph.uploads == []
        assert not chat.messages.filter(direction=Message.Direction.OUTBOUND).exists()

    def test_a_customer_message_pushes_the_reopened_window_to_an_open_chat(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _cloud_chat(a, graph, wrote_hours_ago=25)
        event = InboundEvent(
            channel_id=chat.channel_id, provider_message_id="wamid.again", chat_key=chat.customer_key,
            from_me=False, kind="text", text="Hello again", media=None,
            provider_ts=int(time.time()) - 600,
        )  # fmt: skip
        stored = ingest.accept(event)

        chat = Chat.objects.select_related("channel").get(pk=chat.pk)
        pushed = fragments.for_new_messages([Message.objects.get(pk=stored.message_id)], chat)

        (badge,) = [f for f in pushed if f["id"] == f"window-{chat.pk}"]
        assert "Window closes in 23 h" in badge["html"]
        assert 'data-window-state="open"' in badge["html"]
        assert badge["scope"] == "chat"

    def test_a_linked_device_chat_shows_no_window(self, a: Tenant) -> None:
        page = _client(a.manager).get(f"/inbox/chat/{a.chat.pk}/").content.decode()
        assert "data-window-closes-at" not in page
        assert "data-window-lockable>" in page


class TestApi:
    def test_chats_carry_their_window(self, a: Tenant, graph: GraphApiEmulator) -> None:
        chat = _cloud_chat(a, graph, wrote_hours_ago=25)

        body = _api_get(a.manager, f"/chats/{chat.pk}").json()
        sandbox = _api_get(a.manager, f"/chats/{a.chat.pk}").json()

        assert body["window_closes_at"] is not None
        assert body["window_open"] is False
        assert (sandbox["window_closes_at"], sandbox["window_open"]) == (None, True)

    def test_free_text_outside_the_window_is_a_409_that_names_the_way_out(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _cloud_chat(a, graph, wrote_hours_ago=25)

        response = _api_post(a.manager, f"/chats/{chat.pk}/reply", {"text": "Still there?"})

        assert response.status_code == 409
        body = response.json()
        assert body["error"] == "window_closed"
        assert "only an approved template" in body["detail"]
        assert body["window_closes_at"] is not None
        assert graph.sent_to("77015550001") == []
        assert not chat.messages.filter(author=Message.Author.MANAGER).exists()

    def test_another_business_still_gets_404_not_409(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _cloud_chat(a, graph, wrote_hours_ago=25)
        other = tenant("B")

        response = _api_post(other.manager, f"/chats/{chat.pk}/reply", {"text": "hi"})

        assert response.status_code == 404
