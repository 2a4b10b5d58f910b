"""`python manage.py set_approval <channel id> {off,amounts,all}`: supervised replies on an
existing channel, from the shell."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from inbox.conversations.models import Approval, Channel


class Command(BaseCommand):
    help = (
        "Set which bot replies of a channel wait for a manager's approval (off, amounts: a "
        "reply stating an amount, date or promise, all), and optionally the minutes a draft "
        "may wait before a person gets the chat."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("channel", type=int, help="the channel's id")
        parser.add_argument("approval", choices=[a.value for a in Approval])
        parser.add_argument("--timeout-minutes", type=int, default=None)

    def handle(self, *args: Any, **o: Any) -> None:
        channel = Channel.objects.filter(pk=o["channel"]).first()
        if channel is None:
            raise CommandError(f"no channel with id {o['channel']}")
        fields = ["approval"]
        channel.approval = o["approval"]
        if o["timeout_minutes"] is not None:
            if o["timeout_minutes"] < 1:
                raise CommandError("--timeout-minutes must be ≥ 1")
            channel.approval_timeout_minutes = o["timeout_minutes"]
            fields.append("approval_timeout_minutes")
        channel.save(update_fields=fields)
        self.stdout.write(
            f"channel {channel.pk}: approval {channel.approval}, "
            f"timeout {channel.approval_timeout_minutes} min"
        )
