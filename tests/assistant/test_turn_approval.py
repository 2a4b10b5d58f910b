"""Supervised replies: with approval on, the bot's reply waits as a draft until a manager
approves, edits or rejects it; the customer sees nothing before that."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db.models import F
from django.utils import timezone

from assistant import approval
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.turn import take_turn
from inbox.conversations import drafts, turns
from inbox.conversations.models import (
    Approval,
    Channel,
    Chat,
    Draft,
    Handoff,
    HandoffReason,
    Message,
    Owner,
    Turn,
)
from inbox.upkeep import approvals
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator
from tests.emulators.openai_server import Step

pytestmark = pytest.mark.django_db(transaction=True)

NUMBER = "106540352249991"
CUSTOMER = "77015550091"
PRICES = b"SKU,Name,Price,Currency\nT-1,Oak table,120000,KZT\nT-2,Pine table,80000,KZT\n"


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        emulator.register_number(NUMBER, "tok-a")
        yield emulator


def _chat(mode: str, **channel_fields: Any) -> Chat:
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id=NUMBER, access_token="tok-a",
        approval=mode, **channel_fields,
    )  # fmt: skip
    apply_price_list(parse_price_file(PRICES, "p.csv"), channel.business)
    chat = factories.chat(channel, customer_key=CUSTOMER, customer_phone=CUSTOMER)
    factories.customer_message(chat, "How much is the oak table?")
    Chat.objects.filter(pk=chat.pk).update(version=1)
    return chat


def _customer_writes(chat: Chat, text: str) -> None:
    factories.customer_message(chat, text)
    Chat.objects.filter(pk=chat.pk).update(version=F("version") + 1)


def _held(settings: Any, emu: Any, chat: Chat, reply: str) -> Draft:
    settings.LLM_BASE_URL = emu.base_url
    emu.script(Step.decision(reply=reply))
    turn = take_turn(chat.pk)
    assert turn is not None
    assert turn.outcome == Turn.Outcome.AWAITING_APPROVAL
    return Draft.objects.get(chat=chat, state=Draft.State.PENDING)


def test_with_approval_all_nothing_reaches_the_customer_until_approved(settings, emu, graph):
    chat = _chat(Approval.ALL)
    draft = _held(settings, emu, chat, "The oak table is 120 000 KZT.")

    assert graph.sent_to(CUSTOMER) == []
    assert not chat.messages.filter(direction=Message.Direction.OUTBOUND).exists()
    # The waiting reply is not a stuck chat, and no second turn answers the same messages.
    assert chat.pk not in turns.stuck_chat_ids(0)
    assert take_turn(chat.pk) is None

    manager = factories.manager(chat.channel.business)
    outcome = drafts.approve(chat.pk, manager=manager)

    assert outcome.ok
    assert [m.text for m in graph.sent_to(CUSTOMER)] == ["The oak table is 120 000 KZT."]
    draft.refresh_from_db()
    assert (draft.state, draft.decided_by_id) == (Draft.State.APPROVED, manager.pk)
    assert Turn.objects.get(pk=draft.turn_id).reply_message_id == draft.message_id
    # Decided once: a second press finds nothing pending.
    assert drafts.approve(chat.pk, manager=manager).reason == "no_draft"
    assert len(graph.sent_to(CUSTOMER)) == 1


def test_an_edited_draft_sends_the_edited_text_as_the_bots_reply(settings, emu, graph):
    chat = _chat(Approval.ALL)
    draft = _held(settings, emu, chat, "The oak table is 120 000 KZT.")
    manager = factories.manager(chat.channel.business)

    assert drafts.approve(chat.pk, manager=manager, text="The oak table is 115 000 KZT.").ok

    assert [m.text for m in graph.sent_to(CUSTOMER)] == ["The oak table is 115 000 KZT."]
    draft.refresh_from_db()
    assert (draft.state, draft.sent_text) == (Draft.State.EDITED, "The oak table is 115 000 KZT.")
    sent = Message.objects.get(pk=draft.message_id)
    assert (sent.author, sent.sent_by_bot) == (Message.Author.BOT, True)
    assert Chat.objects.get(pk=chat.pk).owner == Owner.BOT


def test_a_rejected_draft_hands_the_chat_to_a_person(settings, emu, graph):
    chat = _chat(Approval.ALL)
    _held(settings, emu, chat, "The oak table is 120 000 KZT.")
    manager = factories.manager(chat.channel.business)

    assert drafts.reject(chat.pk, manager=manager).ok

    assert graph.sent_to(CUSTOMER) == []
    assert Chat.objects.get(pk=chat.pk).owner == Owner.PENDING_HUMAN
    handoff = Handoff.objects.get(chat=chat)
    assert handoff.reason == HandoffReason.REJECTED_DRAFT
    assert HandoffReason.label_for(handoff.reason) == "A manager rejected the bot's draft"
    assert Draft.objects.get(chat=chat).state == Draft.State.REJECTED


def test_a_newer_customer_message_supersedes_the_draft(settings, emu, graph):
    chat = _chat(Approval.ALL)
    first = _held(settings, emu, chat, "The oak table is 120 000 KZT.")
    _customer_writes(chat, "And the pine one?")

    # Approving the old draft now is refused: it no longer answers the chat.
    assert drafts.approve(chat.pk, manager=None).reason == "no_draft"
    second = _held(settings, emu, chat, "The pine table is 80 000 KZT.")

    first.refresh_from_db()
    assert first.state == Draft.State.SUPERSEDED
    assert second.pk != first.pk
    assert graph.sent_to(CUSTOMER) == []
    assert drafts.approve(chat.pk, manager=None).ok
    assert [m.text for m in graph.sent_to(CUSTOMER)] == ["The pine table is 80 000 KZT."]


def test_a_draft_not_approved_in_time_tells_the_customer_and_hands_off(settings, emu, graph):
    chat = _chat(Approval.ALL, approval_timeout_minutes=10)
    draft = _held(settings, emu, chat, "The oak table is 120 000 KZT.")

    assert approvals.expire_overdue(timezone.now() + timedelta(minutes=9)) == 0
    assert approvals.expire_overdue(timezone.now() + timedelta(minutes=11)) == 1

    sent = [m.text for m in graph.sent_to(CUSTOMER)]
    assert sent == [approval.timeout_notice(chat.channel)]
    assert "manager will confirm" in sent[0]
    assert Chat.objects.get(pk=chat.pk).owner == Owner.PENDING_HUMAN
    assert Handoff.objects.get(chat=chat).reason == HandoffReason.APPROVAL_TIMEOUT
    draft.refresh_from_db()
    assert draft.state == Draft.State.EXPIRED


def test_the_timeout_counts_only_working_hours(settings, emu, graph):
    # Closed every day but Monday 09:00-09:01: hardly any working time passes.
    chat = _chat(
        Approval.ALL, approval_timeout_minutes=10, working_hours={"mon": ["09:00", "09:01"]}
    )
    _held(settings, emu, chat, "The oak table is 120 000 KZT.")

    assert approvals.expire_overdue(timezone.now() + timedelta(hours=3)) == 0
    assert graph.sent_to(CUSTOMER) == []


def test_amounts_lets_a_greeting_through_and_holds_a_price(settings, emu, graph):
    chat = _chat(Approval.AMOUNTS)
    settings.LLM_BASE_URL = emu.base_url
    emu.script(Step.decision(reply="Hello! Which table do you like?"))
    assert take_turn(chat.pk).outcome == Turn.Outcome.ANSWERED
    assert [m.text for m in graph.sent_to(CUSTOMER)] == ["Hello! Which table do you like?"]

    _customer_writes(chat, "The oak one, how much?")
    _held(settings, emu, chat, "The oak table is 120 000 KZT.")
    assert len(graph.sent_to(CUSTOMER)) == 1


def test_what_amounts_holds() -> None:
    assert approval.commitments("Hello! Which table do you like?") == []
    assert approval.commitments("It is 120 000 KZT.")
    assert approval.commitments("We can deliver by 12.03.")
    assert approval.commitments("We'll give you a discount.")
    assert approval.commitments("Delivery takes 3-5 days.")


def test_an_opt_out_confirmation_never_waits(graph) -> None:
    chat = _chat(Approval.ALL)
    factories.customer_message(chat, "STOP")
    Chat.objects.filter(pk=chat.pk).update(answered_up_to=chat.messages.first().pk)

    turn = take_turn(chat.pk)

    assert turn is not None
    assert turn.outcome == Turn.Outcome.ANSWERED
    assert len(graph.sent_to(CUSTOMER)) == 1
    assert not Draft.objects.filter(chat=chat).exists()
