"""Resend: a failed message really goes out again as a new send (a new provider id), from the
JSON API and the inbox; refused where sending again cannot work; only within the tenant."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from inbox.conversations import delivery_status
from inbox.conversations.events import StatusEvent
from inbox.conversations.models import Channel, Chat, Message, Owner
from inbox.conversations.outbound import send_manager_reply, send_reply
from inbox.web.api_tokens import create_token
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator

pytestmark = pytest.mark.django_db(transaction=True)

CUSTOMER = "77011234567"


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        yield emulator


@pytest.fixture
def chat(graph: GraphApiEmulator) -> Chat:
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id="106540352242922", access_token="tok-1"
    )
    graph.register_number("106540352242922", "tok-1")
    return factories.chat(channel, customer_key=CUSTOMER, customer_phone=CUSTOMER)


def _api(user: Any) -> tuple[Client, str]:
    _, token = create_token(user, "tests")
    return Client(), token


def _resend(user: Any, chat_id: int, message_id: int) -> Any:
    client, token = _api(user)
    return client.post(
        f"/api/v1/chats/{chat_id}/messages/{message_id}/resend",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def _failed(message_id: int, code: str, title: str = "Meta's title") -> Message:
    message = Message.objects.get(pk=message_id)
    delivery_status.apply(
        StatusEvent(
            channel_id=message.channel_id, provider_message_id=message.provider_message_id,
            status="failed", provider_ts=int(time.time()), error_code=code, error_title=title,
        )
    )  # fmt: skip
    message.refresh_from_db()
    assert message.status == Message.Status.FAILED
    return message


def test_a_failed_message_is_sent_again_as_a_new_send(chat: Chat, graph: GraphApiEmulator) -> None:
    manager = factories.manager(chat.channel.business)
    first = send_manager_reply(chat.pk, "Your table ships today.", manager=manager)
    failed = _failed(first.message_id or 0, "131000", "Something went wrong")

    response = _resend(manager, chat.pk, failed.pk)

    assert response.status_code == 200, response.content
    new_id = response.json()["message_id"]
    sends = graph.sent_to(CUSTOMER)
    assert [s.text for s in sends] == ["Your table ships today."] * 2
    assert sends[0].wamid != sends[1].wamid
    again = Message.objects.get(pk=new_id)
    assert (again.status, again.provider_message_id, again.text) == (
        "sent", sends[1].wamid, "Your table ships today."
    )  # fmt: skip
    assert again.payload["resend_of"] == failed.pk
    failed.refresh_from_db()
    assert (failed.status, failed.provider_message_id) == ("failed", sends[0].wamid)
    assert failed.payload["resent_as"] == again.pk
    # Pressed twice: sent once.
    twice = _resend(manager, chat.pk, failed.pk)
    assert twice.status_code == 409
    assert "already sent again" in twice.json()["detail"]
    assert len(graph.sent_to(CUSTOMER)) == 2


def test_the_bots_failed_quote_is_resent_by_the_manager_who_takes_the_chat(
    chat: Chat, graph: GraphApiEmulator
) -> None:
    manager = factories.manager(chat.channel.business)
    asked = factories.customer_message(chat, "price?")
    Chat.objects.filter(pk=chat.pk).update(version=1)
    first = send_reply(chat.pk, "Oak table: 120 000 KZT.", generated_at_version=1,
                       answered_up_to=asked.pk)  # fmt: skip
    failed = _failed(first.message_id or 0, "130429", "Rate limit hit")

    response = _resend(manager, chat.pk, failed.pk)

    assert response.status_code == 200, response.content
    again = Message.objects.get(pk=response.json()["message_id"])
    assert (again.author, again.sent_by_id, again.text) == (
        "manager", manager.pk, "Oak table: 120 000 KZT."
    )  # fmt: skip
    chat.refresh_from_db()
    assert (chat.owner, chat.assigned_to_id) == (Owner.HUMAN, manager.pk)
    assert len(graph.sent_to(CUSTOMER)) == 2


@pytest.mark.parametrize(
    ("code", "words"),
    [("131026", "cannot receive WhatsApp messages"), ("131047", "only a template message")],
)
def test_a_resend_that_cannot_work_is_refused_with_the_reason(
    chat: Chat, graph: GraphApiEmulator, code: str, words: str
) -> None:
    manager = factories.manager(chat.channel.business)
    first = send_manager_reply(chat.pk, "hi", manager=manager)
    failed = _failed(first.message_id or 0, code)

    response = _resend(manager, chat.pk, failed.pk)

    assert response.status_code == 409
    assert words in response.json()["detail"]
    assert len(graph.sent_to(CUSTOMER)) == 1
    failed.refresh_from_db()
    assert "resent_as" not in failed.payload
    client, token = _api(manager)
    shown = client.get(f"/api/v1/chats/{chat.pk}", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert shown["undeliverable"] is (code == "131026")
    (message,) = [m for m in shown["messages"] if m["id"] == failed.pk]
    assert message["error_explanation"].startswith(
        "This number is not on WhatsApp" if code == "131026" else "More than 24 hours"
    )
    # The inbox shows the reason instead of a Resend button.
    client = Client()
    client.force_login(manager)
    page = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
    assert words in page
    assert 'data-action="resend"' not in page


def test_another_business_cannot_resend_or_learn_the_message_exists(
    chat: Chat, graph: GraphApiEmulator
) -> None:
    mine = factories.manager(chat.channel.business)
    first = send_manager_reply(chat.pk, "hi", manager=mine)
    failed = _failed(first.message_id or 0, "131000")
    stranger = factories.manager(factories.business("Other"))
    other_chat = factories.chat(factories.channel(chat.channel.business))

    assert _resend(stranger, chat.pk, failed.pk).status_code == 404
    # A message id of another chat (even of the same business) is not this chat's.
    assert _resend(mine, other_chat.pk, failed.pk).status_code == 404
    assert len(graph.sent_to(CUSTOMER)) == 1


def test_the_inbox_resend_button_sends_and_links_to_the_new_message(
    chat: Chat, graph: GraphApiEmulator
) -> None:
    manager = factories.manager(chat.channel.business)
    first = send_manager_reply(chat.pk, "See you at 5.", manager=manager)
    failed = _failed(first.message_id or 0, "131056", "pair rate limit hit")
    client = Client()
    client.force_login(manager)
    assert 'data-action="resend"' in client.get(f"/inbox/chat/{chat.pk}/").content.decode()

    response = client.post(
        f"/inbox/chat/{chat.pk}/messages/{failed.pk}/resend/", HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 200
    again = Message.objects.get(payload__resend_of=failed.pk)
    html = response.content.decode()
    assert f'data-resent-as="{again.pk}"' in html
    assert 'data-action="resend"' not in html
    assert len(graph.sent_to(CUSTOMER)) == 2
