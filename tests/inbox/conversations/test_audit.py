"""The audit trail of owner and status changes: one writer (`inbox.conversations.audit`), one
model (`ChatTransition`, on the table it always had), and causes from two closed sets."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inbox.conversations import audit, ownership, status
from inbox.conversations.models import (
    ChatStatus,
    ChatTransition,
    Owner,
    OwnershipCause,
    StatusCause,
)
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_model_keeps_its_table() -> None:
    assert ChatTransition._meta.db_table == "inbox_ownershiptransition"
    chat = factories.chat()
    ownership.request_human(chat.pk, reason="complaint")
    assert [t.cause for t in chat.transitions.all()] == [OwnershipCause.REQUEST_HUMAN]


def test_the_cause_choices_are_the_two_closed_sets_and_nothing_else() -> None:
    field = ChatTransition._meta.get_field("cause")
    assert [value for value, _label in field.flatchoices] == [
        *OwnershipCause.values,
        *StatusCause.values,
    ]
    assert not set(OwnershipCause.values) & set(StatusCause.values)
    assert field.max_length >= max(len(value) for value, _label in field.flatchoices)


def test_every_cause_the_state_machines_write_is_a_member() -> None:
    chat = factories.chat()
    manager = factories.manager(chat.channel.business, username="anna")
    ownership.request_human(chat.pk, reason="complaint")
    ownership.take_over(chat.pk, manager=manager)
    ownership.release(chat.pk, manager=manager)
    ownership.manager_replied(chat.pk, manager=None)
    status.resolve(chat.pk, manager=manager)
    status.reopen(chat.pk, manager=manager)
    status.snooze(chat.pk, until=timezone.now() + timedelta(hours=1), manager=manager)

    rows = list(chat.transitions.order_by("pk"))
    assert [(row.cause, row.is_status_change) for row in rows] == [
        (OwnershipCause.REQUEST_HUMAN, False),
        (OwnershipCause.TAKE_OVER, False),
        (OwnershipCause.RELEASE, False),
        (OwnershipCause.MANAGER_REPLIED, False),
        (StatusCause.RESOLVE, True),
        (StatusCause.REOPEN, True),
        (StatusCause.SNOOZE, True),
    ]
    assert [row.get_cause_display() for row in rows[:1]] == ["Assistant handed over"]


def test_record_writes_an_owner_change_and_a_status_change() -> None:
    chat = factories.chat()
    chat.owner = Owner.HUMAN
    owner_row = audit.record(
        chat, OwnershipCause.TAKE_OVER, actor=None, actor_label="anna", from_owner=Owner.BOT
    )
    assert (owner_row.from_owner, owner_row.to_owner, owner_row.to_status) == (
        Owner.BOT,
        Owner.HUMAN,
        "",
    )
    assert not owner_row.is_status_change

    until = timezone.now() + timedelta(hours=2)
    chat.status, chat.snoozed_until = ChatStatus.SNOOZED, until
    status_row = audit.record(
        chat, StatusCause.SNOOZE, actor=None, actor_label="anna", from_status=ChatStatus.OPEN
    )
    assert (status_row.from_owner, status_row.to_owner) == (Owner.HUMAN, Owner.HUMAN)
    assert (status_row.from_status, status_row.to_status) == (ChatStatus.OPEN, ChatStatus.SNOOZED)
    assert status_row.snoozed_until == until
    assert status_row.is_status_change


def test_an_unsaved_actor_is_kept_by_its_label_only() -> None:
    chat = factories.chat()
    ghost = factories.manager(chat.channel.business, username="ghost")
    ghost.pk = None
    row = audit.record(
        chat, StatusCause.RESOLVE, actor=ghost, actor_label=audit.label_for(ghost, "system"),
        from_status=ChatStatus.OPEN,
    )  # fmt: skip
    assert (row.actor, row.actor_label) == (None, "ghost")
    assert audit.label_for(None, "phone") == "phone"
