"""`manage.py bitrix24_check`: the "test connection" action from the shell."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from inbox.conversations.models import Business
from integrations.bitrix24.setup import check


class Command(BaseCommand):
    help = (
        "Test a business's Bitrix24 connection: prints the portal, the user the integration "
        "acts as and its scopes, or a clear error (exit status 1)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--business", required=True, help="Business name.")

    def handle(self, *args: Any, **opts: Any) -> None:
        business = Business.objects.filter(name=opts["business"]).first()
        if business is None:
            raise CommandError(f"no business named {opts['business']!r}")
        report = check.test_connection(business.pk)
        check.store_report(business.pk, report)
        if not report.ok:
            raise CommandError(f"Connection failed: {report.error}")
        self.stdout.write(f"Connected to {report.portal}")
        self.stdout.write(f"  user: {report.user}")
        self.stdout.write(f"  scopes: {', '.join(report.scopes) or '(none reported)'}")
        for warning in report.warnings:
            self.stdout.write(f"  warning: {warning}")
