"""Customers who use a WhatsApp username (2026): webhooks carry their business-scoped user id
(BSUID, `contacts[].user_id`, `from_user_id`, `recipient_user_id`) and may carry no phone. Each
goes through the real webhook endpoint and the ingest consumer; a customer is one chat however
they come, and the bot answers one without a phone at their BSUID."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.db import connections
from django.test import Client

from assistant.turn import take_turn
from inbox.conversations import opt_outs
from inbox.conversations.ingest.store import accept_batch
from inbox.conversations.ingest.worker import IngestWorker
from inbox.conversations.models import Channel, Chat, Handoff, HandoffReason, Message, Turn
from inbox.conversations.outbound import send_manager_reply
from inbox.platform.logs import mask_phone_numbers
from inbox.site.asgi import application
from integrations.whatsapp.cloud_events import normalise
from integrations.whatsapp.webhooks import routes
from tests import factories
from tests.emulators.graph_api import (
    GraphApiEmulator,
    contact,
    envelope,
    sign,
    status_update,
    text_message,
)
from tests.emulators.openai_server import OpenAIEmulator, Step

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "bsuid-app-secret"
PNID = "106540352242555"
PHONE = "77015550123"
BSUID = "KZ.13491208655302741918"
USERNAME = "aigerim.k"


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    settings.WHATSAPP_APP_SECRET = SECRET
    routes.clear()
    with GraphApiEmulator(app_secret=SECRET) as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        emulator.register_number(PNID, "tok-bsuid")
        yield emulator
    connections.close_all()


@pytest.fixture
def emu(settings: Any) -> Iterator[OpenAIEmulator]:
    with OpenAIEmulator() as server:
        settings.LLM_BASE_URL = server.base_url
        yield server


@pytest.fixture
def channel(graph: GraphApiEmulator) -> Channel:
    return factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id=PNID, access_token="tok-bsuid",
        late_answer_cutoff_minutes=100_000,
    )  # fmt: skip


def _webhook(body: dict[str, Any]) -> int:
    """POST the body, signed, to the real webhook endpoint; then one ingest consumer step."""
    raw = json.dumps(body).encode()

    async def post() -> int:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            response = await client.post(
                "/webhooks/whatsapp/", content=raw,
                headers={"Content-Type": "application/json",
                         "X-Hub-Signature-256": sign(SECRET, raw)},
            )  # fmt: skip
        return response.status_code

    status = async_to_sync(post)()
    IngestWorker(name="bsuid", block_ms=10).step()
    return status


def _says(text: str, *, phone: str = "", bsuid: str = BSUID, username: str = "") -> None:
    """The customer writes: with a phone and/or a BSUID, as Meta sends it."""
    body = envelope(
        PNID,
        messages=[text_message(phone, text, user_id=bsuid)],
        contacts=[contact(phone, "Aigerim", bsuid, username=username)],
    )
    assert _webhook(body) == 200


def _texts(chat: Chat) -> list[str]:
    return list(chat.messages.order_by("pk").values_list("text", flat=True))


def test_a_customer_without_a_phone_is_answered_at_their_bsuid(
    channel: Channel, graph: GraphApiEmulator, emu: OpenAIEmulator
) -> None:
    _says("Do you have oak tables?", username=USERNAME)

    chat = Chat.objects.get(channel=channel)
    assert (chat.customer_key, chat.customer_bsuid, chat.customer_phone) == (BSUID, BSUID, "")
    assert chat.customer_username == USERNAME
    assert _texts(chat) == ["Do you have oak tables?"]

    emu.script(Step.decision(reply="Yes, we have oak tables."))
    turn = take_turn(chat.pk)

    assert turn is not None
    assert turn.outcome == Turn.Outcome.ANSWERED
    (sent,) = graph.sent_to(BSUID)
    # Meta takes a BSUID in `recipient`, never in `to` (that is for phone numbers).
    assert (sent.to, sent.recipient, sent.text) == ("", BSUID, "Yes, we have oak tables.")
    reply = chat.messages.get(direction=Message.Direction.OUTBOUND)
    assert reply.provider_message_id == sent.wamid

    # Its statuses name only the BSUID (no recipient_id) and still find the message.
    update = status_update(sent.wamid, "delivered", "", user_id=BSUID)
    assert "recipient_id" not in update
    assert _webhook(envelope(PNID, statuses=[update])) == 200
    reply.refresh_from_db()
    assert reply.status == "delivered"


def test_a_later_message_with_phone_and_bsuid_joins_the_same_chat(channel: Channel) -> None:
    _says("Hello, is the sofa in stock?", username=USERNAME)
    first = Chat.objects.get(channel=channel)

    _says("My number is on this message now", phone=PHONE)
    _says("And again only the username", username=USERNAME)

    (chat,) = Chat.objects.filter(channel=channel)
    assert chat.pk == first.pk  # re-keyed in place: nothing moved, nothing split
    assert (chat.customer_key, chat.customer_phone, chat.customer_bsuid) == (PHONE, PHONE, BSUID)
    assert _texts(chat) == [
        "Hello, is the sofa in stock?",
        "My number is on this message now",
        "And again only the username",
    ]
    assert chat.customer_messages == 3


def test_a_manager_replies_to_a_customer_without_a_phone(
    channel: Channel, graph: GraphApiEmulator
) -> None:
    _says("Can someone call me back?", username=USERNAME)
    chat = Chat.objects.get(channel=channel)
    manager = factories.manager(channel.business)

    outcome = send_manager_reply(chat.pk, "Dana here: write your number?", manager=manager)

    assert outcome.sent
    (sent,) = graph.sent
    assert (sent.to, sent.recipient, sent.text) == ("", BSUID, "Dana here: write your number?")


def test_an_opt_out_given_under_the_bsuid_follows_the_customer_to_their_phone(
    channel: Channel,
) -> None:
    _says("Stop the promotions", username=USERNAME)
    business_id = channel.business_id
    assert opt_outs.record(business_id, BSUID, "manager", detail="asked in chat")

    _says("Here is my number now", phone=PHONE)

    assert opt_outs.opted_out(business_id, PHONE)
    assert not opt_outs.opted_out(business_id, BSUID)


def test_a_phone_chat_that_later_gets_a_bsuid_keeps_it(
    channel: Channel, graph: GraphApiEmulator, emu: OpenAIEmulator
) -> None:
    _says("Before usernames", phone=PHONE, bsuid="")
    chat = Chat.objects.get(channel=channel)
    assert (chat.customer_key, chat.customer_bsuid) == (PHONE, "")

    _says("Now Meta sends my BSUID too", phone=PHONE)
    chat.refresh_from_db()
    assert chat.customer_bsuid == BSUID

    _says("Now I hide my number", username=USERNAME)

    (same,) = Chat.objects.filter(channel=channel)
    assert same.pk == chat.pk
    assert same.customer_bsuid == BSUID
    assert same.customer_username == USERNAME
    assert _texts(same)[-1] == "Now I hide my number"

    # The chat has a phone: the bot still answers at the phone, in `to`.
    emu.script(Step.decision(reply="Noted."))
    take_turn(same.pk)
    (sent,) = graph.sent_to(PHONE)
    assert (sent.to, sent.recipient) == (PHONE, "")


def test_a_bsuid_chat_is_merged_into_an_older_phone_chat(channel: Channel) -> None:
    # A chat from before BSUIDs were stored: the username message cannot know it yet.
    older = factories.chat(channel, customer_key=PHONE, customer_phone=PHONE)
    factories.customer_message(older, "Last year's question")
    Chat.objects.filter(pk=older.pk).update(customer_messages=1)
    _says("A question from my username", username=USERNAME)
    lonely = Chat.objects.get(channel=channel, customer_key=BSUID)
    Handoff.objects.create(chat=lonely, reason=HandoffReason.ASKS_FOR_HUMAN, summary="Wants a call")

    _says("Now with my number", phone=PHONE)

    (chat,) = Chat.objects.filter(channel=channel)
    assert chat.pk == older.pk
    assert chat.customer_bsuid == BSUID
    assert _texts(chat) == [
        "Last year's question",
        "A question from my username",
        "Now with my number",
    ]
    assert chat.customer_messages == 3
    assert Handoff.objects.get(summary="Wants a call").chat_id == chat.pk


def test_one_batch_with_both_shapes_merges_and_stores_everything_in_one_chat(
    channel: Channel,
) -> None:
    older = factories.chat(channel, customer_key=PHONE, customer_phone=PHONE)
    _says("First, from my username", username=USERNAME)
    bodies = [
        envelope(PNID, messages=[text_message("", "Second, username again", user_id=BSUID)],
                 contacts=[contact("", "Aigerim", BSUID)]),
        envelope(PNID, messages=[text_message(PHONE, "Third, with my number", user_id=BSUID)],
                 contacts=[contact(PHONE, "Aigerim", BSUID)]),
    ]  # fmt: skip
    events = [e for body in bodies for e in normalise(body, {PNID: channel.pk}).events]

    outcomes = accept_batch(events)

    assert [o.outcome for o in outcomes] == ["stored", "stored"]
    assert {o.chat_id for o in outcomes} == {older.pk}
    (chat,) = Chat.objects.filter(channel=channel)
    assert _texts(chat) == [
        "First, from my username",
        "Second, username again",
        "Third, with my number",
    ]
    assert chat.customer_messages == 3


def test_the_contact_panel_shows_username_and_bsuid_where_there_is_no_phone(
    channel: Channel,
) -> None:
    _says("Hi", username=USERNAME)
    chat = Chat.objects.get(channel=channel)
    manager = factories.manager(channel.business)
    client = Client()
    client.force_login(manager)

    page = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
    assert f"@{USERNAME}" in page
    assert BSUID in page

    # Nameless: the header calls them by their username.
    Chat.objects.filter(pk=chat.pk).update(customer_name="")
    page = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
    assert f'<h1 title="@{USERNAME}">@{USERNAME}</h1>' in page

    channel.business.mask_phone_for_managers = True
    channel.business.save(update_fields=["mask_phone_for_managers"])
    page = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
    assert f"@{USERNAME}" in page
    assert BSUID not in page
    assert "KZ.…18" in page


def test_bsuids_never_reach_a_log_unmasked() -> None:
    line = f"sent to {BSUID} (parent US.ENT.11815799212886844830), phone +{PHONE}"
    masked = mask_phone_numbers(line)
    assert BSUID not in masked
    assert "11815799212886844830" not in masked
    assert PHONE not in masked
    assert "KZ.…18" in masked


def test_the_migration_fills_in_the_bsuid_of_chats_already_keyed_by_it(channel: Channel) -> None:
    from django.apps import apps

    migration = importlib.import_module("inbox.conversations.migrations.0022_chat_bsuid")
    keyed = factories.chat(channel, customer_key=BSUID)
    phone = factories.chat(channel, customer_key=PHONE, customer_phone=PHONE)
    sandbox = factories.chat(factories.channel(), customer_key="US.1234567")

    migration._backfill(apps, None)

    assert Chat.objects.get(pk=keyed.pk).customer_bsuid == BSUID
    assert Chat.objects.get(pk=phone.pk).customer_bsuid == ""
    assert Chat.objects.get(pk=sandbox.pk).customer_bsuid == ""
