"""Demo data for `make run`: a business, a sandbox channel, a price list and an admin login.

The demo shop speaks Russian: its assistant's language, its inbox's default and its admin's
inbox are Russian (DEMO_LANGUAGE); each member may choose another on "My profile"."""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from assistant.demo import ensure_demo_assistant
from inbox.conversations.models import Business, Channel, Membership

DEMO_BUSINESS = "Demo Furniture"
DEMO_LANGUAGE = "ru"


class Command(BaseCommand):
    help = "Create the demo business, its sandbox channel and an admin user (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            business, _ = Business.objects.get_or_create(
                name=DEMO_BUSINESS,
                defaults={"language": DEMO_LANGUAGE, "ui_language": DEMO_LANGUAGE},
            )
            channel, _ = Channel.objects.get_or_create(
                business=business,
                kind=Channel.Kind.SANDBOX,
                defaults={"name": "Sandbox", "language": DEMO_LANGUAGE},
            )
            if ensure_demo_assistant(business):
                self.stdout.write("[seed] demo price list and assistant settings")
            username, password, created = self._admin_user()
            user = get_user_model().objects.get(username=username)
            Membership.objects.get_or_create(
                user=user,
                business=business,
                defaults={"role": Membership.Role.ADMIN, "ui_language": DEMO_LANGUAGE},
            )
        self.stdout.write(f"[seed] business '{business.name}', sandbox channel #{channel.pk}")
        if created or password:
            self.stdout.write(f"[seed] log in as '{username}' with password: {password}")
        else:
            self.stdout.write(
                f"[seed] log in as '{username}' (password unchanged; reset it with "
                f"`python manage.py changepassword {username}`)"
            )

    def _admin_user(self) -> tuple[str, str, bool]:
        """The superuser from DJANGO_SUPERUSER_USERNAME/PASSWORD, or one with a generated
        password kept in var/ (mode 0600) so a development restart can print it again."""
        username = os.environ.get("DJANGO_SUPERUSER_USERNAME", "admin")
        password = os.environ.get("DJANGO_SUPERUSER_PASSWORD", "")
        password_file = settings.VAR_DIR / "admin-password"
        user_model = get_user_model()
        user = user_model.objects.filter(username=username).first()
        if user is None:
            password = password or secrets.token_urlsafe(12)
            user_model.objects.create_superuser(username=username, email="", password=password)
            if not os.environ.get("DJANGO_SUPERUSER_PASSWORD"):
                settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
                password_file.write_text(password)
                password_file.chmod(0o600)
            return username, password, True
        if password:
            user.set_password(password)
            user.save(update_fields=["password"])
            return username, password, False
        if password_file.exists() and user.check_password(password_file.read_text().strip()):
            return username, password_file.read_text().strip(), False
        return username, "", False
