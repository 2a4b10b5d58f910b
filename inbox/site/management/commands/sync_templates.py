"""`python manage.py sync_templates`: read Cloud API channels' message templates now."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from inbox.conversations.models import Channel
from integrations.whatsapp import template_sync


class Command(BaseCommand):
    help = (
        "Read the WhatsApp message templates of a Cloud API channel (or of every active one "
        "with a WABA ID) from the Graph API into the template store."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--channel", type=int, help="the channel's id (default: all)")

    def handle(self, *args: Any, **o: Any) -> None:
        if o["channel"]:
            channels = list(Channel.objects.filter(pk=o["channel"], kind=Channel.Kind.CLOUD_API))
            if not channels:
                raise CommandError(f"no Cloud API channel with id {o['channel']}")
        else:
            channels = template_sync.syncable()
        failed = 0
        for channel in channels:
            try:
                result = template_sync.sync(channel)
            except template_sync.SyncError as exc:
                failed += 1
                self.stderr.write(f"channel {channel.pk}: {exc}")
                continue
            self.stdout.write(
                f"channel {channel.pk}: {result.stored} templates, {result.removed} removed"
            )
        if failed:
            raise CommandError(f"{failed} channel(s) could not be synced")
