"""The conversation status: resolve, snooze, reopen, wake, and reopening when the customer
writes, each recorded in the chat's audit history with who and when."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inbox.conversations import ingest, ownership, status
from inbox.conversations.events import InboundEvent
from inbox.conversations.models import Chat, ChatStatus, ChatTransition, Owner, StatusCause
from inbox.upkeep.tasks import wake_snoozed_chats
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


def _status_rows(chat: Chat) -> list[tuple[str, str, str, str]]:
    return list(
        ChatTransition.objects.filter(chat=chat)
        .exclude(to_status="")
        .values_list("from_status", "to_status", "cause", "actor_label")
    )


def test_resolve_then_reopen_is_audited_with_the_manager_and_keeps_the_owner() -> None:
    chat = factories.chat()
    anna = factories.manager(chat.channel.business, username="anna")
    anna.first_name = "Anna"
    anna.save(update_fields=["first_name"])
    ownership.take_over(chat.pk, manager=anna)

    assert status.resolve(chat.pk, manager=anna).changed
    assert not status.resolve(chat.pk, manager=anna).changed  # already resolved
    chat.refresh_from_db()
    assert (chat.status, chat.owner) == (ChatStatus.RESOLVED, Owner.HUMAN)
    assert chat.status_changed_at is not None

    assert status.reopen(chat.pk, manager=anna).changed
    chat.refresh_from_db()
    assert chat.status == ChatStatus.OPEN
    assert _status_rows(chat) == [
        ("open", "resolved", StatusCause.RESOLVE, "Anna"),
        ("resolved", "open", StatusCause.REOPEN, "Anna"),
    ]
    resolved = ChatTransition.objects.filter(chat=chat, cause=StatusCause.RESOLVE).get()
    assert (resolved.from_owner, resolved.to_owner, resolved.actor) == ("human", "human", anna)


def test_a_snooze_must_end_in_the_future() -> None:
    chat = factories.chat()
    with pytest.raises(status.InvalidStatusChange):
        status.snooze(chat.pk, until=timezone.now() - timedelta(minutes=1), manager=None)
    assert Chat.objects.get(pk=chat.pk).status == ChatStatus.OPEN


def test_a_status_change_does_not_make_a_prepared_bot_reply_stale() -> None:
    chat = factories.chat()
    before = Chat.objects.get(pk=chat.pk).version
    status.resolve(chat.pk, manager=None)
    assert Chat.objects.get(pk=chat.pk).version == before


@pytest.mark.parametrize("how", ["resolve", "snooze"])
def test_a_resolved_or_snoozed_chat_reopens_when_the_customer_writes(how: str) -> None:
    chat = factories.chat(customer_key="77011234567")
    if how == "resolve":
        status.resolve(chat.pk, manager=None)
    else:
        status.snooze(chat.pk, until=timezone.now() + timedelta(hours=3), manager=None)

    _customer_writes(chat)

    chat.refresh_from_db()
    assert (chat.status, chat.snoozed_until, chat.customer_messages) == ("open", None, 1)
    assert _status_rows(chat)[-1] == (
        "resolved" if how == "resolve" else "snoozed", "open", StatusCause.CUSTOMER_WROTE, "customer",
    )  # fmt: skip


def _writes(queries: CaptureQueriesContext) -> list[str]:
    """The statements that write: INSERT, UPDATE, and (PostgreSQL's batched ingest) a WITH
    whose parts insert the messages and update their chats."""
    return [q["sql"] for q in queries if q["sql"].startswith(("INSERT", "UPDATE", "WITH"))]


def _tables_written(queries: CaptureQueriesContext) -> set[str]:
    return {t for w in _writes(queries) for t in re.findall(r'(?:INSERT INTO|UPDATE) "(\w+)"', w)}


def test_a_message_in_an_open_chat_costs_no_status_query() -> None:
    chat = factories.chat(customer_key="77011234567")
    _customer_writes(chat, "first")
    with CaptureQueriesContext(connection) as open_chat:
        _customer_writes(chat, "second")
    assert not any("inbox_ownershiptransition" in q["sql"] for q in open_chat)

    status.resolve(chat.pk, manager=None)
    with CaptureQueriesContext(connection) as reopening:
        _customer_writes(chat, "third")
    # Reopening adds only the audit row: the status goes in the one write of the chat row.
    assert _tables_written(reopening) == _tables_written(open_chat) | {"inbox_ownershiptransition"}
    chat_writes = {
        name: [w for w in _writes(queries) if 'UPDATE "inbox_chat"' in w]
        for name, queries in (("open", open_chat), ("reopening", reopening))
    }
    assert [len(writes) for writes in chat_writes.values()] == [1, 1]
    assert '"status"' in chat_writes["reopening"][0]
    assert len([w for w in _writes(reopening) if "inbox_ownershiptransition" in w]) == 1


def test_the_beat_task_wakes_due_snoozes_only() -> None:
    due, later, reopened = factories.chat(), factories.chat(), factories.chat()
    for chat in (due, later, reopened):
        status.snooze(chat.pk, until=timezone.now() + timedelta(minutes=30), manager=None)
    Chat.objects.filter(pk__in=[due.pk, reopened.pk]).update(
        snoozed_until=timezone.now() - timedelta(seconds=1)
    )
    status.reopen(reopened.pk, manager=None)

    assert wake_snoozed_chats() == 1
    assert wake_snoozed_chats() == 0  # idempotent

    assert Chat.objects.get(pk=due.pk).status == ChatStatus.OPEN
    assert Chat.objects.get(pk=later.pk).status == ChatStatus.SNOOZED
    assert _status_rows(due)[-1] == ("snoozed", "open", StatusCause.SNOOZE_ENDED, "system")
    assert _status_rows(reopened)[-1][2] == StatusCause.REOPEN


def test_status_rows_do_not_disturb_the_handoff_shown_for_a_waiting_chat() -> None:
    chat = factories.chat()
    ownership.request_human(chat.pk, reason="customer_asked")
    status.resolve(chat.pk, manager=None)
    last = ChatTransition.objects.filter(chat=chat, to_status="").order_by("-pk").first()
    assert last is not None
    assert last.reason == "customer_asked"
