"""Debounce timers in Redis and the scheduler loop that hands due chats to the assistant queue:
the claim itself against the real Redis, then real scheduler processes, a real Celery worker
and real turns."""

from __future__ import annotations

import ast
import contextlib
import json
import sys
import threading
import time
from collections import Counter
from typing import Any

import pytest
from django.db import transaction

from inbox.conversations import debounce
from inbox.conversations.models import Turn
from inbox.platform.redis import get_redis
from inbox.site.embedded_redis import free_port
from tests import factories
from tests.processes import ProcessGroup, wait_for

LEASE = 30.0


def _turns(chat_id: int) -> list[Turn]:
    return list(
        Turn.objects.filter(chat_id=chat_id).exclude(outcome=Turn.Outcome.RUNNING).order_by("pk")
    )


def _queued_turn_chats() -> Counter[int]:
    """The chats of the `assistant.run_turn` tasks waiting in the broker's assistant queue."""
    found: Counter[int] = Counter()
    for raw in get_redis().lrange("assistant", 0, -1):
        headers = json.loads(raw)["headers"]
        if headers["task"] == debounce.TURN_TASK:
            found[int(ast.literal_eval(headers["argsrepr"])[0])] += 1
    return found


# --- The timers and the claim, against the real Redis ------------------------------------------


def test_a_timer_is_claimed_once_and_only_after_its_quiet_period() -> None:
    token = debounce.schedule(41, delay=0.3)

    assert debounce.claim_due(10, LEASE).chats == []
    claimed = wait_for(lambda: debounce.claim_due(10, LEASE).chats, timeout=5, interval=0.01)

    assert [(c.chat_id, c.token) for c in claimed] == [(41, token)]
    assert debounce.claim_due(10, LEASE).chats == []  # leased: not due again
    assert debounce.release(claimed) == 1
    assert not get_redis().exists(debounce.DUE_KEY)


def _due_ms(chat_id: int) -> float:
    """The chat's score in the due set: its due time (or lease) in ms, on Redis's clock."""
    score = get_redis().zscore(debounce.DUE_KEY, str(chat_id))
    assert score is not None, f"chat {chat_id} has no timer"
    return float(score)


def test_a_message_in_the_quiet_period_pushes_the_timer_and_supersedes_the_token() -> None:
    first = debounce.schedule(42, delay=0.4)
    first_due = _due_ms(42)
    second = debounce.schedule(42, delay=0.6)  # the customer types the next message of the burst
    second_due = _due_ms(42)

    # Read from Redis's clock, not timed with a sleep: the second message set the due time to
    # its own time + 0.6 s (at least 0.2 s past the first's), it did not keep the earlier one.
    assert second_due >= first_due + 200
    claimed = wait_for(lambda: debounce.claim_due(10, LEASE).chats, timeout=5, interval=0.01)

    assert [c.token for c in claimed] == [second]
    assert claimed[0].due_ms >= second_due  # claimed only once the pushed-back time came
    assert not debounce.is_current(42, first)


def test_schedule_many_starts_each_timer_with_its_channel_delay(db: Any) -> None:
    slow = factories.chat(factories.channel(debounce_seconds=60))
    quick = factories.chat(factories.channel(debounce_seconds=0))

    tokens = debounce.schedule_many([(slow.pk, None), (quick.pk, None), (7, 0.0)])

    claimed = wait_for(lambda: debounce.claim_due(10, LEASE).chats, timeout=5, interval=0.01)
    assert sorted((c.chat_id, c.token) for c in claimed) == sorted(
        [(quick.pk, tokens[quick.pk]), (7, tokens[7])]
    )
    assert debounce.is_current(slow.pk, tokens[slow.pk])


@pytest.mark.django_db(transaction=True)
def test_timers_asked_for_in_a_transaction_start_when_it_commits_and_not_if_it_rolls_back() -> None:
    chats = [factories.chat(factories.channel(debounce_seconds=0)) for _ in range(3)]
    with transaction.atomic():
        for chat in chats:
            debounce.schedule_on_commit(chat.pk)
        debounce.schedule_on_commit(chats[0].pk, 0.0)  # a second message of the same chat
        assert not get_redis().exists(debounce.DUE_KEY)  # nothing before the commit
    claimed = wait_for(
        lambda: len(debounce.claim_due(10, LEASE).chats) == 3 or None, timeout=5, interval=0.01
    )
    assert claimed

    with transaction.atomic():
        with contextlib.suppress(RuntimeError), transaction.atomic():
            debounce.schedule_on_commit(chats[2].pk, 0.0)
            raise RuntimeError("the savepoint rolls back, the outer transaction goes on")
        debounce.schedule_on_commit(chats[1].pk, 0.0)
    again = wait_for(lambda: debounce.claim_due(10, LEASE).chats, timeout=5, interval=0.01)
    assert [c.chat_id for c in again] == [chats[1].pk]

    leased = _due_ms(chats[0].pk)  # claimed above: its score is the lease, 30 s ahead
    with contextlib.suppress(RuntimeError), transaction.atomic():
        debounce.schedule_on_commit(chats[0].pk, 0.0)
        raise RuntimeError("rolled back")
    # A timer of 0 s would be due at once (on-commit callbacks run before `atomic` returns):
    # no wait needed to see that none started.
    assert _due_ms(chats[0].pk) == leased
    assert debounce.claim_due(10, LEASE).chats == []


def test_racing_claims_hand_each_timer_to_exactly_one_claimer() -> None:
    debounce.schedule_many([(chat_id, 0.05) for chat_id in range(1000, 1300)])
    claimed: list[int] = []
    lock = threading.Lock()

    def claimer() -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            chats = debounce.claim_due(7, LEASE).chats
            with lock:
                claimed.extend(c.chat_id for c in chats)
                if len(claimed) >= 300:
                    return

    threads = [threading.Thread(target=claimer) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(claimed) == list(range(1000, 1300))


def test_a_lease_that_runs_out_makes_the_chat_due_again_with_its_token() -> None:
    token = debounce.schedule(43, delay=0)
    (lost,) = debounce.claim_due(10, lease_seconds=0.3).chats  # its scheduler dies here

    (again,) = wait_for(lambda: debounce.claim_due(10, LEASE).chats, timeout=5, interval=0.01)

    assert (again.chat_id, again.token) == (43, token)
    assert debounce.release([lost]) == 0  # the dead scheduler's lease is not the current one


def test_releasing_a_dispatched_chat_keeps_a_timer_a_newer_message_set() -> None:
    debounce.schedule(44, delay=0)
    (dispatched,) = debounce.claim_due(10, LEASE).chats
    newer = debounce.schedule(44, delay=0.2)  # the customer wrote while the turn was queued

    assert debounce.release([dispatched]) == 0
    (next_turn,) = wait_for(lambda: debounce.claim_due(10, LEASE).chats, timeout=5, interval=0.01)
    assert next_turn.token == newer


def test_a_token_lost_while_no_scheduler_ran_still_gets_its_turn() -> None:
    debounce.schedule(45, delay=0)
    get_redis().delete("debounce:45")

    (claimed,) = debounce.claim_due(10, LEASE).chats

    assert debounce.is_current(45, claimed.token)


# --- Real processes ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(180)
def test_a_burst_of_three_messages_is_one_turn_after_the_quiet_period(
    processes: ProcessGroup,
) -> None:
    # The production wiring: the worker on the assistant queue runs the scheduler itself.
    processes.start_celery_worker("debounce-worker")
    chat = factories.chat(factories.channel(debounce_seconds=1.0))
    burst = []
    due: list[float] = []
    for text in ("hi", "how much is the oak table", "and delivery to Almaty?"):
        burst.append(factories.customer_message(chat, text).pk)
        debounce.schedule(chat.pk)
        due.append(_due_ms(chat.pk))  # each message restarts the quiet period

    (turn,) = wait_for(lambda: _turns(chat.pk), timeout=30, message="the burst's turn")

    assert due == sorted(due)
    # After the last message's quiet period (Redis's clock and the worker's, the same host).
    assert turn.started_at.timestamp() * 1000 >= due[-1] - 50
    assert (turn.first_message_id, turn.last_message_id) == (burst[0], burst[-1])  # all three
    wait_for(lambda: not get_redis().exists(f"debounce:{chat.pk}"), message="the turn to finish")
    assert len(_turns(chat.pk)) == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(180)
def test_two_schedulers_racing_dispatch_each_chat_once(processes: ProcessGroup) -> None:
    processes.start_debounce_scheduler("debounce-a")
    processes.start_debounce_scheduler("debounce-b")
    channel = factories.channel(debounce_seconds=0.5)
    chats = [factories.chat(channel) for _ in range(40)]
    for chat in chats:
        factories.customer_message(chat, "do you deliver?")

    debounce.schedule_many([(chat.pk, None) for chat in chats[:20]])
    for chat in chats[20:]:
        debounce.schedule(chat.pk, 0.05 * (chat.pk % 7))

    # No worker yet: what the schedulers published waits in the broker's queue, countable.
    wait_for(lambda: sum(_queued_turn_chats().values()) >= 40, timeout=30, message="dispatch")
    wait_for(lambda: not get_redis().exists(debounce.DUE_KEY), message="every lease released")
    assert _queued_turn_chats() == Counter({chat.pk: 1 for chat in chats})

    processes.start_celery_worker(
        "debounce-race-worker", env={"DEBOUNCE_SCHEDULER_IN_WORKERS": "0"}
    )
    for chat in chats:
        wait_for(lambda chat=chat: _turns(chat.pk), timeout=60, message=f"chat {chat.pk}'s turn")
    assert all(len(_turns(chat.pk)) == 1 for chat in chats)


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(180)
def test_a_scheduler_killed_mid_run_loses_no_due_chat(processes: ProcessGroup) -> None:
    processes.start_celery_worker(
        "debounce-kill-worker", env={"DEBOUNCE_SCHEDULER_IN_WORKERS": "0"}
    )
    # This scheduler's broker is unreachable: it claims the due chats and cannot publish them,
    # the worst moment to die.
    dead_broker = f"redis://127.0.0.1:{free_port()}/0"
    doomed = processes.start_debounce_scheduler(
        "debounce-doomed", env={"CELERY_BROKER_URL": dead_broker}, lease_seconds=2.0
    )
    channel = factories.channel(debounce_seconds=0.1)
    due = [factories.chat(channel) for _ in range(5)]
    later = [factories.chat(factories.channel(debounce_seconds=3.0)) for _ in range(3)]
    for chat in due + later:
        factories.customer_message(chat, "is the sofa in stock?")
        debounce.schedule(chat.pk)
    scheduled_at_ms = time.time() * 1000

    def all_claimed() -> bool:
        scores = [get_redis().zscore(debounce.DUE_KEY, str(chat.pk)) for chat in due]
        return all(s is not None and s > scheduled_at_ms + 1000 for s in scores)  # leased

    wait_for(all_claimed, timeout=10, message="the doomed scheduler to claim the due chats")
    processes.kill("debounce-doomed")
    assert doomed.poll() is not None
    assert not any(_turns(chat.pk) for chat in due + later)

    processes.start_debounce_scheduler("debounce-successor")

    for chat in due + later:
        wait_for(lambda chat=chat: _turns(chat.pk), timeout=60, message=f"chat {chat.pk}'s turn")
    wait_for(lambda: not get_redis().exists(debounce.DUE_KEY), message="every timer done")
    assert all(len(_turns(chat.pk)) == 1 for chat in due + later)


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_only_workers_that_run_turns_run_a_scheduler(processes: ProcessGroup) -> None:
    def schedulers() -> int:
        ((_, count),) = get_redis().pubsub_numsub(debounce.WAKE_CHANNEL)
        return int(count)

    before = schedulers()
    processes.start(
        "debounce-speech-worker",
        [sys.executable, "-m", "celery", "-A", "inbox", "worker", "--loglevel", "INFO", "-Q", "speech",
         "--concurrency", "1", "--hostname", "debounce-speech@%h", "--without-gossip",
         "--without-mingle"],
    )  # fmt: skip
    processes.wait_celery_ready("debounce-speech-worker")
    assert schedulers() == before

    processes.start_celery_worker("debounce-assistant-worker")
    wait_for(
        lambda: schedulers() == before + 1, timeout=20, message="the assistant worker's scheduler"
    )
