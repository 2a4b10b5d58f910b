"""`python manage.py ingest_worker`: the long-running ingest consumer
(inbox/conversations/ingest_worker.py)."""

from __future__ import annotations

import gc
import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from inbox.conversations.ingest_worker import IngestWorker


class Command(BaseCommand):
    help = "Consume webhook events from the Redis stream and store them (run one or more)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", default=None, help="consumer name (default host-pid)")
        parser.add_argument("--batch", type=int, default=100)
        parser.add_argument(
            "--claim-idle-ms",
            type=int,
            default=30_000,
            help="reclaim entries another consumer left unacknowledged this long",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        worker = IngestWorker(
            name=options["name"], batch=options["batch"], claim_idle_ms=options["claim_idle_ms"]
        )

        def stop(signum: int, frame: object) -> None:
            worker.stop_event.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        # What is loaded by now (Django, the apps, the models) lives as long as the process:
        # frozen, a full collection no longer walks it. The consumer allocates model objects
        # by the thousand; without this it spent ~35 µs per event in generation-2 collections.
        gc.collect()
        gc.freeze()
        # A young collection every 20,000 allocations instead of 700: a batch of a hundred
        # events makes tens of thousands of short-lived objects (rows, models, dicts), and at
        # the default most collections found nothing to free (4 % of the instructions per
        # event, counted by valgrind at 1,000 chats). What lives on is still collected.
        gc.set_threshold(20_000, 20, 20)
        worker.run()
