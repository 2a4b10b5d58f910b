"""`python manage.py create_api_token USER [--name NAME]`: a token for the JSON API."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from inbox.web.api_tokens import create_token


class Command(BaseCommand):
    help = (
        "Create a JSON API token for USER (same permissions as the user has in the inbox). "
        "The token is printed once; only its hash is stored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="What the token is for.")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        row, token = create_token(user, options["name"])
        self.stderr.write(f"token #{row.pk} for {user.get_username()} (shown once, keep it safe):")
        self.stdout.write(token)
