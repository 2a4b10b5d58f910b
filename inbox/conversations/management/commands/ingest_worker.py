"""`python manage.py ingest_worker`: the long-running ingest consumer
(inbox/conversations/ingest/worker.py)."""

from __future__ import annotations

import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from inbox.conversations.ingest.worker import IngestWorker
from inbox.platform import heap


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
        heap.freeze_startup_heap()
        worker.run()
