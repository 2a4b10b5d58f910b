"""`python manage.py debounce_scheduler`: the debounce scheduler loop as a process of its own
(inbox/conversations/debounce/scheduler.py). Every assistant Celery worker runs one on a thread
already; this is for running it apart from them (DEBOUNCE_SCHEDULER_IN_WORKERS=0)."""

from __future__ import annotations

import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from inbox.conversations.debounce import DebounceScheduler


class Command(BaseCommand):
    help = "Hand due debounce timers to the assistant queue (any number may run)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--lease-seconds", type=float, default=None)
        parser.add_argument("--idle-seconds", type=float, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        scheduler = DebounceScheduler(
            lease_seconds=options["lease_seconds"], idle_seconds=options["idle_seconds"]
        )

        def stop(signum: int, frame: object) -> None:
            scheduler.stop_event.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        scheduler.run()
