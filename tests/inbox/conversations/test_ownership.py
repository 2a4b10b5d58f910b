"""The ownership state machine: every transition, every refusal, and concurrency."""

from __future__ import annotations

import itertools
import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from inbox.conversations import ownership
from inbox.conversations.models import Chat, ChatTransition, Owner, OwnershipCause
from tests import factories

pytestmark = pytest.mark.django_db


def _chat_in(owner: str) -> Chat:
    chat = factories.chat()
    Chat.objects.filter(pk=chat.pk).update(owner=owner)
    chat.refresh_from_db()
    return chat


def _audit(chat: Chat) -> list[tuple[str, str, str]]:
    return list(
        ChatTransition.objects.filter(chat=chat).values_list("from_owner", "to_owner", "cause")
    )


class TestAllowedTransitions:
    def test_request_human_moves_bot_to_pending_and_records_reason(self) -> None:
        chat = _chat_in(Owner.BOT)

        result = ownership.request_human(chat.pk, reason="ready_to_buy")

        assert result.changed
        chat.refresh_from_db()
        assert chat.owner == Owner.PENDING_HUMAN
        assert chat.version == 1
        row = ChatTransition.objects.get(chat=chat)
        assert (row.from_owner, row.to_owner, row.cause, row.reason) == (
            Owner.BOT,
            Owner.PENDING_HUMAN,
            OwnershipCause.REQUEST_HUMAN,
            "ready_to_buy",
        )
        assert row.actor_label == "bot"
        assert row.version == 1

    @pytest.mark.parametrize("start", [Owner.BOT, Owner.PENDING_HUMAN])
    def test_take_over_moves_to_human_with_the_manager_as_actor(self, start: str) -> None:
        chat = _chat_in(start)
        manager = factories.manager(chat.channel.business, username="aigerim")

        ownership.take_over(chat.pk, manager=manager)

        chat.refresh_from_db()
        assert chat.owner == Owner.HUMAN
        row = ChatTransition.objects.get(chat=chat)
        assert row.actor == manager
        assert row.actor_label == "aigerim"

    @pytest.mark.parametrize("start", [Owner.BOT, Owner.PENDING_HUMAN, Owner.HUMAN])
    def test_manager_reply_from_the_phone_makes_the_chat_human(self, start: str) -> None:
        chat = _chat_in(start)
        at = timezone.now()

        result = ownership.manager_replied(chat.pk, manager=None, at=at)

        chat.refresh_from_db()
        assert chat.owner == Owner.HUMAN
        assert chat.last_manager_at == at
        assert result.changed is (start != Owner.HUMAN)
        if start != Owner.HUMAN:
            assert ChatTransition.objects.get(chat=chat).actor_label == "phone"

    @pytest.mark.parametrize("start", [Owner.HUMAN, Owner.PENDING_HUMAN])
    def test_release_gives_the_chat_back_to_the_bot(self, start: str) -> None:
        chat = _chat_in(start)
        manager = factories.manager(chat.channel.business)

        ownership.release(chat.pk, manager=manager)

        chat.refresh_from_db()
        assert chat.owner == Owner.BOT
        assert _audit(chat) == [(start, Owner.BOT, OwnershipCause.RELEASE)]

    def test_release_marks_messages_written_during_human_ownership_as_answered(self) -> None:
        chat = _chat_in(Owner.HUMAN)
        last = factories.customer_message(chat, "is it ready?")

        ownership.release(chat.pk, manager=None)

        chat.refresh_from_db()
        assert chat.answered_up_to == last.pk  # the bot will not answer it after the release

    def test_idle_release_after_the_channel_idle_hours_since_the_last_manager_message(self) -> None:
        chat = _chat_in(Owner.HUMAN)
        Chat.objects.filter(pk=chat.pk).update(last_manager_at=timezone.now() - timedelta(hours=5))

        assert ownership.idle_chat_ids() == [chat.pk]
        ownership.idle_release(chat.pk)

        chat.refresh_from_db()
        assert chat.owner == Owner.BOT
        assert _audit(chat) == [(Owner.HUMAN, Owner.BOT, OwnershipCause.IDLE_RELEASE)]


class TestRefusedTransitions:
    def test_request_human_is_refused_while_a_human_owns_the_chat(self) -> None:
        chat = _chat_in(Owner.HUMAN)

        with pytest.raises(ownership.InvalidTransition, match="request_human"):
            ownership.request_human(chat.pk, reason="complaint")

        chat.refresh_from_db()
        assert (chat.owner, chat.version) == (Owner.HUMAN, 0)
        assert _audit(chat) == []

    @pytest.mark.parametrize("start", [Owner.PENDING_HUMAN, Owner.BOT])
    def test_idle_release_only_applies_to_human_chats(self, start: str) -> None:
        chat = _chat_in(start)

        if start == Owner.BOT:
            assert ownership.idle_release(chat.pk).changed is False
        else:
            with pytest.raises(ownership.InvalidTransition):
                ownership.idle_release(chat.pk)
        chat.refresh_from_db()
        assert chat.owner == start
        assert _audit(chat) == []

    def test_idle_release_is_refused_while_the_manager_is_active(self) -> None:
        chat = _chat_in(Owner.HUMAN)
        Chat.objects.filter(pk=chat.pk).update(
            last_manager_at=timezone.now() - timedelta(minutes=10)
        )

        assert ownership.idle_chat_ids() == []
        with pytest.raises(ownership.InvalidTransition, match="active"):
            ownership.idle_release(chat.pk)
        chat.refresh_from_db()
        assert chat.owner == Owner.HUMAN

    def test_idle_clock_runs_from_the_last_manager_message_not_the_customer(self) -> None:
        chat = _chat_in(Owner.HUMAN)
        long_ago = timezone.now() - timedelta(hours=10)
        Chat.objects.filter(pk=chat.pk).update(
            last_customer_at=long_ago, last_manager_at=timezone.now() - timedelta(hours=1)
        )

        assert ownership.idle_chat_ids() == []

    @pytest.mark.parametrize(
        ("start", "call"),
        [
            (Owner.PENDING_HUMAN, lambda c, m: ownership.request_human(c, reason="x")),
            (Owner.HUMAN, lambda c, m: ownership.take_over(c, manager=m)),
            (Owner.BOT, lambda c, m: ownership.release(c, manager=m)),
        ],
    )
    def test_repeating_a_transition_changes_nothing(self, start: str, call) -> None:  # type: ignore[no-untyped-def]
        chat = _chat_in(start)
        manager = factories.manager(chat.channel.business)

        result = call(chat.pk, manager)

        assert result.changed is False
        chat.refresh_from_db()
        assert (chat.owner, chat.version) == (start, 0)
        assert _audit(chat) == []


@pytest.mark.django_db(transaction=True)
def test_concurrent_transitions_end_in_one_consistent_state_with_a_full_audit_trail() -> None:
    """Managers and the bot race on one chat from many threads (separate DB connections).
    Each transition is serialised by the row lock: the audit trail is one unbroken chain."""
    if connection.vendor == "sqlite":
        pytest.skip("row locks need PostgreSQL (CI runs this on PostgreSQL)")
    chat = factories.chat()
    manager = factories.manager(chat.channel.business)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            barrier.wait()
            for _ in range(10):
                try:
                    if i % 4 == 0:
                        ownership.request_human(chat.pk, reason="ready_to_buy")
                    elif i % 4 == 1:
                        ownership.take_over(chat.pk, manager=manager)
                    elif i % 4 == 2:
                        ownership.release(chat.pk, manager=manager)
                    else:
                        ownership.manager_replied(chat.pk, manager=None)
                except ownership.InvalidTransition:
                    pass
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    chat.refresh_from_db()
    trail = list(ChatTransition.objects.filter(chat=chat).order_by("version"))
    assert trail, "some transitions must have happened"
    assert [t.version for t in trail] == list(range(1, len(trail) + 1))
    assert chat.version == len(trail)
    assert trail[0].from_owner == Owner.BOT
    for before, after in itertools.pairwise(trail):
        assert after.from_owner == before.to_owner
        assert after.from_owner != after.to_owner
    assert chat.owner == trail[-1].to_owner
