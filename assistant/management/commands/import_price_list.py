"""`python manage.py import_price_list --business NAME [--channel ID] FILE [--apply]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from assistant.knowledge.price_import import ImportPreview, apply_price_list, parse_price_file
from inbox.conversations.models import Business, Channel


class Command(BaseCommand):
    help = (
        "Import a CSV or XLSX price list. Without --apply it only prints the preview (rows and "
        "row-level errors) and writes nothing; with --apply a file without errors becomes the "
        "new current version, atomically. --channel imports the channel's override list."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="the .csv or .xlsx file")
        parser.add_argument("--business", required=True, help="the business's exact name")
        parser.add_argument("--channel", type=int, help="channel id: import its override list")
        parser.add_argument("--currency", default="", help="currency when the file names none")
        parser.add_argument("--apply", action="store_true", help="write the new version")

    def handle(self, *args: Any, **options: Any) -> None:
        business = Business.objects.filter(name=options["business"]).first()
        if business is None:
            raise CommandError(f"no business named {options['business']!r}")
        channel = None
        if options["channel"] is not None:
            channel = Channel.objects.filter(pk=options["channel"], business=business).first()
            if channel is None:
                raise CommandError(f"business has no channel #{options['channel']}")
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"no such file: {path}")
        preview = parse_price_file(path.read_bytes(), path.name, options["currency"])
        self._print_preview(preview)
        if not preview.ok:
            raise CommandError(f"{len(preview.errors)} error(s): nothing was imported")
        if not options["apply"]:
            self.stdout.write("Preview only: run again with --apply to import.")
            return
        version = apply_price_list(preview, business, channel)
        self.stdout.write(self.style.SUCCESS(f"Imported {version}"))

    def _print_preview(self, preview: ImportPreview) -> None:
        self.stdout.write(f"{preview.source_name}: {len(preview.rows)} row(s)")
        if preview.columns:
            mapped = ", ".join(f"{field} ← '{header}'" for field, header in preview.columns.items())
            self.stdout.write(f"columns: {mapped}")
        for row in preview.rows[:20]:
            self.stdout.write(
                f"  line {row.line}: {row.sku or '-'} | {row.name} | {row.price} "
                f"{row.currency} | {row.unit or '-'} | {row.availability}"
            )
        if len(preview.rows) > 20:
            self.stdout.write(f"  … and {len(preview.rows) - 20} more")
        for warning in preview.warnings:
            self.stdout.write(self.style.WARNING(f"warning: {warning}"))
        for error in preview.errors:
            self.stderr.write(self.style.ERROR(f"error: {error}"))
