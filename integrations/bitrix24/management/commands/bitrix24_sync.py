"""`manage.py bitrix24_sync`: a full sync of a business's chats (backfill or repair)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from inbox.conversations.models import Business
from integrations.bitrix24.rest.errors import Bitrix24Error
from integrations.bitrix24.setup import config
from integrations.bitrix24.sync import push


class Command(BaseCommand):
    help = (
        "Check every chat of a business against Bitrix24: find or create missing contacts, "
        "leads/deals and comments; nothing that exists is written again. Queues the work for "
        "the workers, or with --now runs it in this process."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--business", required=True, help="Business name.")
        parser.add_argument("--now", action="store_true", help="Run here instead of queueing.")

    def handle(self, *args: Any, **opts: Any) -> None:
        business = Business.objects.filter(name=opts["business"]).first()
        if business is None:
            raise CommandError(f"no business named {opts['business']!r}")
        count = config.request_full_sync(business.pk)
        self.stdout.write(f"{count} chats marked for a full sync.")
        if not opts["now"]:
            return
        try:
            report = push.drain(business.pk, budget=3600)
        except Bitrix24Error as exc:
            raise CommandError(f"sync stopped: {exc}") from None
        self.stdout.write(
            f"synced {report.synced}, failed {report.failed} (retried later), "
            f"{report.requests} requests"
        )
