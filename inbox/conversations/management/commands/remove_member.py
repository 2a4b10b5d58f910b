"""`python manage.py remove_member`: take a user out of a business from the shell."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from inbox.conversations import team
from inbox.conversations.models import Business


class Command(BaseCommand):
    help = (
        "Remove a user from a business. A user left without any business is deactivated: "
        "every session and API token of theirs stops working at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--business", required=True, help="business name")
        parser.add_argument("--username", required=True)

    def handle(self, *args: Any, **o: Any) -> None:
        business = Business.objects.filter(name=o["business"]).first()
        if business is None:
            raise CommandError(f"no business named {o['business']!r}")
        user = get_user_model().objects.filter(username=o["username"]).first()
        if user is None or not user.memberships.filter(business=business).exists():
            raise CommandError(f"{o['username']!r} is not a member of {business.name}")
        try:
            removal = team.remove_member(business, int(user.pk))
        except team.TeamError as exc:
            raise CommandError(str(exc)) from exc
        line = f"{user.get_username()} removed from {business.name}"
        if removal.chats_unassigned:
            line += f"; {removal.chats_unassigned} open chat(s) unassigned"
        if removal.deactivated:
            line += (
                f"; deactivated (no other business): {removal.sessions_deleted} session(s) "
                f"ended, {removal.tokens_revoked} API token(s) revoked"
            )
        self.stdout.write(line)
