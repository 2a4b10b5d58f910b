"""Resolve ends a person's hold on a chat (inbox/conversations/lifecycle.py): the chat goes back
to the bot, or to waiting for a human with nobody assigned where the business says so; each
change is in the chat's audit history, and so is a Reopen."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from inbox.conversations import assignment, ingest, lifecycle, online, ownership, status
from inbox.conversations.events import InboundEvent
from inbox.conversations.models import (
    Business,
    Chat,
    ChatStatus,
    ChatTransition,
    Owner,
    OwnershipCause,
    StatusCause,
)
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)


def _customer_writes(chat: Chat, text: str = "Hello again") -> None:
    ingest.accept(
        InboundEvent(
            channel_id=chat.channel_id, provider_message_id=f"wamid.{time.monotonic_ns()}",
            chat_key=chat.customer_key, from_me=False, kind="text", text=text, media=None,
            provider_ts=int(time.time()), customer_name="Aigerim",
        )
    )  # fmt: skip


def _held_by_anna(returns_to: str = Business.ResolveReturnsTo.BOT) -> tuple[Chat, object]:
    business = factories.business(resolve_returns_to=returns_to)
    chat = factories.chat(factories.channel(business), customer_key="77011234567")
    anna = factories.manager(business, username="anna")
    anna.first_name = "Anna"
    anna.save(update_fields=["first_name"])
    ownership.request_human(chat.pk, reason="customer_asked")
    ownership.take_over(chat.pk, manager=anna)
    assignment.assign(chat.pk, anna.pk)
    return chat, anna


def _rows(chat: Chat) -> list[tuple[str, str, str, str, str]]:
    return list(
        ChatTransition.objects.filter(chat=chat)
        .order_by("pk")
        .values_list("cause", "from_owner", "to_owner", "to_status", "actor_label")
    )


def test_resolve_returns_a_managers_chat_to_the_bot_and_unassigns_it() -> None:
    chat, anna = _held_by_anna()
    version = Chat.objects.get(pk=chat.pk).version

    result = lifecycle.resolve(chat.pk, manager=anna)

    assert result.changed
    chat.refresh_from_db()
    assert (chat.status, chat.owner, chat.assigned_to_id) == (ChatStatus.RESOLVED, Owner.BOT, None)
    assert chat.version > version  # a reply prepared for the manager's time is never sent
    assert _rows(chat)[-2:] == [
        (StatusCause.RESOLVE, "human", "human", "resolved", "Anna"),
        (OwnershipCause.RESOLVED, "human", "bot", "", "Anna"),
    ]
    assert ChatTransition.objects.filter(chat=chat).last().get_cause_display() == (  # type: ignore[union-attr]
        "Resolved: returned to the bot"
    )


def test_resolving_twice_changes_nothing_the_second_time() -> None:
    chat, anna = _held_by_anna()
    lifecycle.resolve(chat.pk, manager=anna)
    rows = len(_rows(chat))
    assert not lifecycle.resolve(chat.pk, manager=anna).changed
    assert len(_rows(chat)) == rows


def test_where_the_business_says_so_the_chat_waits_for_a_human_with_nobody_assigned() -> None:
    chat, anna = _held_by_anna(Business.ResolveReturnsTo.UNASSIGNED)

    lifecycle.resolve(chat.pk, manager=anna)

    chat.refresh_from_db()
    assert (chat.status, chat.owner, chat.assigned_to_id) == (
        ChatStatus.RESOLVED, Owner.PENDING_HUMAN, None,
    )  # fmt: skip
    assert _rows(chat)[-1] == (
        OwnershipCause.RESOLVED_UNASSIGNED,
        "human",
        "pending_human",
        "",
        "Anna",
    )
    _customer_writes(chat)
    chat.refresh_from_db()
    assert (chat.status, chat.owner, chat.assigned_to_id) == (
        ChatStatus.OPEN, Owner.PENDING_HUMAN, None,
    )  # fmt: skip


def test_a_returning_customer_waits_from_their_message_and_auto_assignment_picks_a_manager() -> (
    None
):
    chat, anna = _held_by_anna(Business.ResolveReturnsTo.UNASSIGNED)
    Business.objects.filter(pk=chat.channel.business_id).update(auto_assign=True)
    boris = factories.manager(chat.channel.business, username="boris")
    online.socket_open([chat.channel.business_id], boris.pk, "socket-boris")
    lifecycle.resolve(chat.pk, manager=anna)
    # The customer comes back an hour after the resolve.
    resolved_at = timezone.now() - timedelta(hours=1)
    Chat.objects.filter(pk=chat.pk).update(owner_changed_at=resolved_at)

    _customer_writes(chat)

    chat.refresh_from_db()
    assert (chat.status, chat.owner, chat.assigned_to_id) == (
        ChatStatus.OPEN, Owner.PENDING_HUMAN, boris.pk,
    )  # fmt: skip
    assert chat.owner_changed_at is not None
    assert chat.owner_changed_at > resolved_at + timedelta(minutes=59)


def test_a_chat_the_bot_has_stays_the_bots_in_either_setting() -> None:
    for returns_to in Business.ResolveReturnsTo.values:
        business = factories.business(resolve_returns_to=returns_to)
        chat = factories.chat(factories.channel(business))
        lifecycle.resolve(chat.pk, manager=None)
        chat.refresh_from_db()
        assert (chat.status, chat.owner) == (ChatStatus.RESOLVED, Owner.BOT)
        assert [row[0] for row in _rows(chat)] == [StatusCause.RESOLVE]


def test_the_customer_returning_after_a_resolve_to_the_bot_starts_a_bot_turn() -> None:
    chat, anna = _held_by_anna()
    factories.customer_message(chat, "question the manager answered")
    lifecycle.resolve(chat.pk, manager=anna)
    answered_up_to = Chat.objects.get(pk=chat.pk).answered_up_to

    _customer_writes(chat, "one more thing")

    chat.refresh_from_db()
    assert (chat.status, chat.owner) == (ChatStatus.OPEN, Owner.BOT)
    # The bot answers from the new message on, not what the manager already handled.
    newest = chat.messages.filter(direction="in").order_by("-pk").first()
    assert newest is not None
    assert newest.text == "one more thing"
    assert answered_up_to < newest.pk
    assert _rows(chat)[-1][0] == StatusCause.CUSTOMER_WROTE


def test_a_reopen_is_in_the_audit_with_who_did_it() -> None:
    chat, anna = _held_by_anna()
    lifecycle.resolve(chat.pk, manager=anna)
    assert status.reopen(chat.pk, manager=anna).changed
    chat.refresh_from_db()
    assert (chat.status, chat.owner) == (ChatStatus.OPEN, Owner.BOT)
    assert _rows(chat)[-1] == (StatusCause.REOPEN, "bot", "bot", "open", "Anna")
