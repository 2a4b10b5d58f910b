"""The Bitrix24 settings form: the business admins' settings page uses it as it is, the Django
admin extends it with the fields only staff set.

Secrets are write-only: the form says whether one is set (for the webhook URL, which portal),
never its value, and an empty input keeps the stored secret.
"""

from __future__ import annotations

from typing import Any

from django import forms

from inbox.web.forms import WriteOnlySecrets, secret_field
from integrations.bitrix24.models import Bitrix24Settings

SECRETS = ("webhook_url", "application_token", "client_secret")
FIELDS = [
    "is_active",
    "mode",
    "portal_url",
    "client_id",
    "entity",
    "pipeline_id",
    "handoff_stage",
    "rate_limit",
    "burst",
    "technical_user_id",
    "default_responsible_id",
    "connector_id",
    "line_id",
    "sync_chats",
    "sync_handoffs",
    "sync_responsible",
    "sync_back",
    "sync_open_channels",
]


class Bitrix24SettingsForm(WriteOnlySecrets):
    """The connection, what syncs, the pipeline and stage mapping; `options()` is what
    `config.configure` applies."""

    secret_fields: tuple[str, ...] = SECRETS
    clearable_secrets = True
    portal_url = forms.URLField(
        required=False, assume_scheme="https", help_text="https://{portal} (local application)."
    )
    webhook_url = secret_field("https://{portal}/rest/{user}/{code}/ — incoming webhook mode.")
    application_token = secret_field("Checks the events Bitrix24 sends to /webhooks/bitrix24/.")
    client_secret = secret_field("Local application mode.")

    class Meta:
        model = Bitrix24Settings
        fields = FIELDS
        labels = {
            "is_active": "Sync switched on",
            "portal_url": "Portal URL",
            "client_id": "Client ID",
        }

    field_order: list[str] | None = [
        "is_active", "mode", "webhook_url", "application_token", "portal_url", "client_id",
        "client_secret", "entity", "pipeline_id", "handoff_stage", "sync_chats", "sync_handoffs",
        "sync_responsible", "sync_back", "sync_open_channels", "connector_id", "line_id",
        "technical_user_id", "default_responsible_id", "rate_limit", "burst",
    ]  # fmt: skip

    def secret_state(self, name: str, stored: str) -> str:
        """A stored webhook URL is described by its portal, never by its code."""
        if name == "webhook_url":
            return f"Set (portal {self.instance.portal_host})."
        return super().secret_state(name, stored)

    def options(self) -> dict[str, Any]:
        """What `config.configure` should change (secrets as typed, as stored when left empty,
        or "" when the admin chose to clear one)."""
        options = {name: self.cleaned_data[name] for name in FIELDS}
        if not options["portal_url"]:
            options["portal_url"] = None  # webhook mode takes it from the webhook URL
        for name in SECRETS:
            if self.cleaned_data.get(name):
                options[name] = self.cleaned_data[name]
        for name in self.cleared_secrets:
            options[name] = ""  # configure() clears it
        return options
