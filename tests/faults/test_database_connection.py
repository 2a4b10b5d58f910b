"""A Celery worker's database connection: kept from one task to the next (a new PostgreSQL
connection per task was 5 ms of a turn's dispatch), and replaced when the database dropped
it (a failover, a restart, an idle-connection reaper), so the next task still does its work.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from inbox.conversations import status
from inbox.conversations.models import Chat, ChatStatus
from inbox.upkeep.tasks import wake_snoozed_chats
from tests import factories
from tests.processes import ProcessGroup, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

APP_NAME = "conn-worker"  # libpq's PGAPPNAME: how this worker's connections show in PostgreSQL


def _worker_backends() -> set[tuple[int, str]]:
    """The worker's open connections, as PostgreSQL sees them: (process id, start time)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, backend_start::text FROM pg_stat_activity "
            "WHERE application_name = %s AND datname = current_database()",
            [APP_NAME],
        )
        return {(pid, started) for pid, started in cursor.fetchall()}


def _snoozed_chat() -> Chat:
    chat = factories.chat()
    status.snooze(chat.pk, until=timezone.now() + timedelta(minutes=30), manager=None)
    return chat


def _woken_by_the_worker(chat: Chat) -> None:
    """Make the chat's snooze due, send the beat task to the worker, wait for the chat to open."""
    Chat.objects.filter(pk=chat.pk).update(snoozed_until=timezone.now() - timedelta(seconds=1))
    wake_snoozed_chats.delay()
    wait_for(
        lambda: Chat.objects.get(pk=chat.pk).status == ChatStatus.OPEN,
        30,
        0.05,
        f"the worker to wake chat {chat.pk}",
    )


def test_a_worker_keeps_its_database_connection_and_replaces_one_the_database_dropped(
    processes: ProcessGroup,
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("connections as PostgreSQL lists them")
    processes.start_celery_worker(APP_NAME, env={"PGAPPNAME": APP_NAME}, concurrency=1)
    first, second, third = _snoozed_chat(), _snoozed_chat(), _snoozed_chat()

    _woken_by_the_worker(first)
    kept = wait_for(_worker_backends, 10, 0.05, "the worker's connection after its task")
    _woken_by_the_worker(second)
    assert _worker_backends() == kept  # the same connection served the second task

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE application_name = %s", [APP_NAME])  # fmt: skip
    wait_for(lambda: not _worker_backends(), 10, 0.05, "the dropped connection to go")

    _woken_by_the_worker(third)  # checked before its first use, and replaced
    replaced = _worker_backends()
    assert replaced
    assert replaced != kept
