"""`manage.py bitrix24_configure`: set up a business's Bitrix24 sync from the shell."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from inbox.conversations.models import Business
from integrations.bitrix24.models import Bitrix24Settings
from integrations.bitrix24.setup import config


class Command(BaseCommand):
    help = (
        "Configure the Bitrix24 sync of a business. The webhook URL "
        "(https://{portal}/rest/{user}/{code}/) is a secret: it is stored encrypted and never "
        "printed; pass '-' to read it from standard input instead of the command line."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--business", required=True, help="Business name.")
        parser.add_argument("--webhook-url", help="Incoming webhook URL, or '-' for stdin.")
        parser.add_argument(
            "--application-token",
            help="Outbound webhook application token (checks events at /webhooks/bitrix24/).",
        )
        parser.add_argument(
            "--entity", choices=Bitrix24Settings.Entity.values, help="What a new chat creates."
        )
        parser.add_argument(
            "--pipeline", type=int, help="Deal pipeline (category) ID; 0 = default."
        )
        parser.add_argument(
            "--handoff-stage",
            help="Stage for handed-off chats: status ID (PREPARATION or C3:PREPARATION) or name.",
        )
        parser.add_argument(
            "--rate", type=float, help="The portal's request drain rate per second (default 2)."
        )
        parser.add_argument("--burst", type=int, help="The portal's burst (default 50).")
        parser.add_argument("--technical-user", type=int, help="Bitrix24 user ID we write as.")
        parser.add_argument("--responsible", type=int, help="Default responsible user ID.")
        parser.add_argument(
            "--field",
            action="append",
            default=[],
            metavar="FACT=UF_CRM_X",
            help="Map a handoff fact to a user field (repeatable), e.g. city=UF_CRM_CITY.",
        )
        parser.add_argument("--mode", choices=Bitrix24Settings.Mode.values, help="Connection mode.")
        parser.add_argument("--portal-url", help="App mode: https://{portal}.")
        parser.add_argument("--client-id", help="App mode: the application's client_id.")
        parser.add_argument("--client-secret", help="App mode: client_secret ('-' for stdin).")
        parser.add_argument("--connector-id", help="App mode: imconnector ID for Open Channels.")
        parser.add_argument("--line", help="App mode: Open Channel line ID.")
        parser.add_argument(
            "--open-channels",
            action="store_true",
            default=None,
            help="App mode: show WhatsApp chats in Open Channels.",
        )
        state = parser.add_mutually_exclusive_group()
        state.add_argument("--active", dest="is_active", action="store_true", default=None)
        state.add_argument("--inactive", dest="is_active", action="store_false")

    def handle(self, *args: Any, **opts: Any) -> None:
        business = Business.objects.filter(name=opts["business"]).first()
        if business is None:
            raise CommandError(f"no business named {opts['business']!r}")
        field_map: dict[str, str] | None = None
        if opts["field"]:
            field_map = {}
            for item in opts["field"]:
                fact, _, uf = item.partition("=")
                if not fact or not uf.startswith("UF_"):
                    raise CommandError(f"--field wants FACT=UF_CRM_…, got {item!r}")
                field_map[fact.strip()] = uf.strip()
        webhook_url = opts["webhook_url"]
        if webhook_url == "-":
            webhook_url = sys.stdin.readline().strip()
        client_secret = opts["client_secret"]
        if client_secret == "-":
            client_secret = sys.stdin.readline().strip()
        try:
            cfg = config.configure(
                business,
                webhook_url=webhook_url,
                application_token=opts["application_token"],
                entity=opts["entity"],
                pipeline_id=opts["pipeline"],
                handoff_stage=opts["handoff_stage"],
                rate_limit=opts["rate"],
                burst=opts["burst"],
                technical_user_id=opts["technical_user"],
                default_responsible_id=opts["responsible"],
                field_map=field_map,
                mode=opts["mode"],
                portal_url=opts["portal_url"],
                client_id=opts["client_id"],
                client_secret=client_secret,
                connector_id=opts["connector_id"],
                line_id=opts["line"],
                sync_open_channels=opts["open_channels"],
                is_active=opts["is_active"],
            )
        except config.ConfigError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write("Bitrix24 sync configured:")
        for line in config.describe(cfg):
            self.stdout.write(f"  {line}")
        self.stdout.write(f"Test it with: manage.py bitrix24_check --business {business.name!r}")
