"""`manage.py purge_old_data [--dry-run]`: remove message content past the retention period."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from inbox.upkeep import retention


class Command(BaseCommand):
    help = (
        "Purge message text, media files and transcripts older than the retention period "
        "(RETENTION_DAYS, or the business's own retention days). Rows stay, marked purged."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Only count what would be purged."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = bool(options["dry_run"])
        reports = retention.purge(dry_run=dry_run)
        if not reports:
            self.stdout.write("No retention period in force (RETENTION_DAYS=0, no override).")
            return
        verb = "would purge" if dry_run else "purged"
        for r in reports:
            self.stdout.write(
                f"{r.business} ({r.days} days, before {r.cutoff:%Y-%m-%d %H:%M} UTC): {verb} "
                f"{r.messages} messages, {r.media_files} media files, {r.handoffs} handoffs, "
                f"{r.turns} turns"
            )
            for error in r.errors:
                self.stderr.write(f"  not purged: {error} (retried next run)")
