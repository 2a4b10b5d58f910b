"""`python manage.py add_member`: give a business an admin or a manager from the shell."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from inbox.conversations import team
from inbox.conversations.models import Business, Channel, Membership


class Command(BaseCommand):
    help = (
        "Add a user (created when new, without a usable password) to a business as admin or "
        "manager, optionally limited to some channels. --password-link prints a one-time "
        "link where the user sets their password."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--business", required=True, help="business name")
        parser.add_argument("--username", required=True)
        parser.add_argument("--email", default="", help="needed for --send-invite")
        parser.add_argument("--role", required=True, choices=Membership.Role.values)
        parser.add_argument(
            "--channel",
            action="append",
            default=[],
            metavar="NAME",
            help="a channel (name or id) the manager is limited to; repeat for several",
        )
        parser.add_argument("--chat-cap", type=int, default=None, help="auto-assignment cap")
        parser.add_argument(
            "--password-link",
            action="store_true",
            help="print a one-time link (PUBLIC_BASE_URL + path) to set the password",
        )
        parser.add_argument("--send-invite", action="store_true", help="mail that link to --email")

    def handle(self, *args: Any, **o: Any) -> None:
        business = Business.objects.filter(name=o["business"]).first()
        if business is None:
            raise CommandError(f"no business named {o['business']!r}")
        channels = [_channel(business, raw) for raw in o["channel"]]
        if o["send_invite"] and not o["email"]:
            raise CommandError("--send-invite needs --email")
        try:
            membership = team.add_member(
                business,
                username=o["username"],
                email=o["email"],
                role=o["role"],
                channels=channels,
                chat_cap=o["chat_cap"],
                allow_existing_user=True,
            )
        except team.TeamError as exc:
            raise CommandError(str(exc)) from exc
        limited = ", ".join(c.name for c in channels) or "all channels"
        self.stderr.write(
            f"{membership.user.get_username()} is now {membership.role} of {business.name} "
            f"({limited})"
        )
        if o["password_link"] or o["send_invite"]:
            link = settings.PUBLIC_BASE_URL + team.password_link_path(membership.user)
            if o["send_invite"]:
                team.send_invitation(membership, link)
                self.stderr.write(f"invitation mailed to {membership.user.email}")
            if o["password_link"]:
                self.stderr.write("one-time link to set the password (works once):")
                self.stdout.write(link)


def _channel(business: Business, raw: str) -> Channel:
    channels = business.channels.all()
    found = channels.filter(name=raw).first()
    if found is None and raw.isdigit():
        found = channels.filter(pk=int(raw)).first()
    if found is None:
        raise CommandError(f"{business.name} has no channel {raw!r}")
    return found
