"""`python manage.py create_channel`: set up a channel from the shell (operators and scripts)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from inbox.conversations.models import Approval, Business, Channel
from inbox.platform import egress


class Command(BaseCommand):
    help = (
        "Create a channel (a WhatsApp number or the sandbox) for a business, creating the "
        "business when none of that name exists. Prints the new channel's id."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--business", required=True, help="business name (created if new)")
        parser.add_argument("--kind", required=True, choices=[k.value for k in Channel.Kind])
        parser.add_argument("--name", default="", help="channel name shown to managers")
        parser.add_argument("--phone-number-id", default="", help="Cloud API phone number ID")
        parser.add_argument("--display-phone-number", default="", help="e.g. 15550783881")
        parser.add_argument(
            "--access-token", default="", help="Cloud API access token (stored encrypted)"
        )
        parser.add_argument(
            "--waba-id", default="", help="WhatsApp Business Account ID (its templates are synced)"
        )
        parser.add_argument("--bridge-url", default="", help="bridge HTTP API base URL")
        parser.add_argument(
            "--bridge-token", default="", help="bridge bearer token (stored encrypted)"
        )
        parser.add_argument(
            "--instance", default="", help="Evolution API instance name (--kind evolution)"
        )
        parser.add_argument("--session", default="", help="WAHA session name (--kind waha)")
        parser.add_argument("--language", default="", help="customers' main language, e.g. en, ru")
        parser.add_argument("--debounce-seconds", type=float, default=4.0)
        parser.add_argument("--idle-release-hours", type=float, default=4.0)
        parser.add_argument("--late-answer-cutoff-minutes", type=float, default=30.0)
        parser.add_argument("--voice-confidence-threshold", type=float, default=0.6)
        parser.add_argument(
            "--no-read-receipts",
            action="store_true",
            help="do not mark customers' messages read when the assistant starts answering",
        )
        parser.add_argument(
            "--approval",
            choices=[a.value for a in Approval],
            default=Approval.OFF.value,
            help="bot replies a manager approves first: off, amounts (an amount, date or "
            "promise), all",
        )
        parser.add_argument(
            "--approval-timeout-minutes",
            type=int,
            default=10,
            help="a draft not approved this long goes to a person (working hours only)",
        )
        parser.add_argument(
            "--no-typing-indicator", action="store_true", help='do not show "typing…" (Cloud API)'
        )

    def handle(self, *args: Any, **o: Any) -> None:
        kind = o["kind"]
        if kind == Channel.Kind.CLOUD_API and not (o["phone_number_id"] and o["access_token"]):
            raise CommandError("--kind cloud_api needs --phone-number-id and --access-token")
        if kind == Channel.Kind.BRIDGE and not (o["bridge_url"] and o["bridge_token"]):
            raise CommandError("--kind bridge needs --bridge-url and --bridge-token")
        gateway = {Channel.Kind.EVOLUTION: "instance", Channel.Kind.WAHA: "session"}.get(kind)
        if gateway and not (o["bridge_url"] and o["bridge_token"] and o[gateway]):
            raise CommandError(f"--kind {kind} needs --bridge-url, --bridge-token and --{gateway}")
        if o["bridge_url"]:
            try:
                egress.check(o["bridge_url"])  # the rule the channel form applies
            except egress.EgressRefused as exc:
                raise CommandError(f"--bridge-url: {exc}") from None
        if (
            o["phone_number_id"]
            and Channel.objects.filter(phone_number_id=o["phone_number_id"]).exists()
        ):
            raise CommandError(f"a channel with phone number ID {o['phone_number_id']} exists")
        if o["approval_timeout_minutes"] < 1:
            raise CommandError("--approval-timeout-minutes must be ≥ 1")
        if o["debounce_seconds"] < 0 or o["idle_release_hours"] <= 0:
            raise CommandError("--debounce-seconds must be ≥ 0 and --idle-release-hours > 0")
        with transaction.atomic():
            business, created = Business.objects.get_or_create(name=o["business"])
            channel = Channel.objects.create(
                business=business,
                kind=kind,
                name=o["name"] or o["display_phone_number"] or kind,
                phone_number_id=o["phone_number_id"],
                display_phone_number=o["display_phone_number"],
                access_token=o["access_token"],
                waba_id=o["waba_id"],
                bridge_url=o["bridge_url"],
                bridge_token=o["bridge_token"],
                gateway_instance=o["instance"] or o["session"],
                language=o["language"],
                debounce_seconds=o["debounce_seconds"],
                idle_release_hours=o["idle_release_hours"],
                late_answer_cutoff_minutes=o["late_answer_cutoff_minutes"],
                voice_confidence_threshold=o["voice_confidence_threshold"],
                read_receipts=not o["no_read_receipts"],
                typing_indicator=not o["no_typing_indicator"],
                approval=o["approval"],
                approval_timeout_minutes=o["approval_timeout_minutes"],
            )
        if created:
            self.stderr.write(f"created business '{business.name}'")
        self.stdout.write(str(channel.pk))
