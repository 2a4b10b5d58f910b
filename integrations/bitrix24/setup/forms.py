"""The Bitrix24 settings form: the business admins' settings page uses it as it is, the Django
admin extends it with the fields only staff set.

Secrets are write-only: the form says whether one is set (for the webhook URL, which portal),
never its value, and an empty input keeps the stored secret.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import QueryDict
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

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
        required=False, assume_scheme="https", help_text=_("https://{portal} (local application).")
    )
    webhook_url = secret_field(_("https://{portal}/rest/{user}/{code}/ — incoming webhook mode."))
    application_token = secret_field(_("Checks the events Bitrix24 sends to /webhooks/bitrix24/."))
    client_secret = secret_field(_("Local application mode."))

    class Meta:
        model = Bitrix24Settings
        fields = FIELDS
        labels = {
            "is_active": _("Sync switched on"),
            "portal_url": _("Portal URL"),
            "client_id": _("Client ID"),
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
            return gettext("Set (portal %(portal)s).") % {"portal": self.instance.portal_host}
        return super().secret_state(name, stored)

    def options(self) -> dict[str, Any]:
        """What `config.configure` should change (secrets as typed, as stored when left empty,
        or "" when the admin chose to clear one)."""
        options = {name: self.cleaned_data[name] for name in FIELDS if name in self.cleaned_data}
        if "portal_url" in options and not options["portal_url"]:
            options["portal_url"] = None  # webhook mode takes it from the webhook URL
        for name in SECRETS:
            if self.cleaned_data.get(name):
                options[name] = self.cleaned_data[name]
        for name in self.cleared_secrets:
            options[name] = ""  # configure() clears it
        return options


# Each mode's own connection fields; a field of the other mode is not on the page.
MODE_FIELDS: dict[str, tuple[str, ...]] = {
    Bitrix24Settings.Mode.WEBHOOK: ("webhook_url", "application_token"),
    Bitrix24Settings.Mode.APP: ("portal_url", "client_id", "client_secret", "application_token"),
}
# Open Channels need the local application (an incoming webhook cannot register a connector).
APP_ONLY = ("sync_open_channels", "connector_id", "line_id")
SYNC_FIELDS = ("sync_chats", "sync_handoffs", "sync_responsible", "sync_back", "sync_open_channels")
DEAL_FIELDS = ("entity", "pipeline_id", "handoff_stage")
ADVANCED_FIELDS = (
    "technical_user_id", "default_responsible_id", "connector_id", "line_id", "rate_limit", "burst",
)  # fmt: skip
SECRET_LABELS = {
    "webhook_url": _("Inbound webhook URL"),
    "application_token": _("Outbound webhook token"),
    "client_secret": _("Application key"),
}
WEBHOOKS_HELP = "https://apidocs.bitrix24.com/local-integrations/local-webhooks.html"
APPS_HELP = "https://apidocs.bitrix24.com/local-integrations/local-apps.html"


class Bitrix24PageForm(Bitrix24SettingsForm):
    """The business admin's page: the connection fields of one mode only (chosen first), each
    in plain words saying where Bitrix24 shows the value; the rest grouped by what it is for."""

    webhook_url = secret_field(
        _(
            "In Bitrix24: Applications → Developer resources → Other → Inbound webhook. Give it "
            "the CRM, Users and Chat permissions and paste the URL it shows "
            "(https://yourshop.bitrix24.kz/rest/1/…/)."
        ),
        label=SECRET_LABELS["webhook_url"],
    )
    application_token = secret_field(
        _(
            "Optional, so changes made in Bitrix24 come back: Developer resources → Other → "
            "Outbound webhook, handler address <inbox>/webhooks/bitrix24/; paste its "
            "“application token” here."
        ),
        label=SECRET_LABELS["application_token"],
    )
    client_secret = secret_field(
        _("Developer resources → Other → Local application (server-side): “Application key”."),
        label=SECRET_LABELS["client_secret"],
    )
    portal_url = forms.URLField(
        required=False,
        assume_scheme="https",
        label=_("Your Bitrix24 address"),
        help_text=_("As in the browser's address bar, e.g. https://yourshop.bitrix24.kz."),
    )

    class Meta(Bitrix24SettingsForm.Meta):
        labels = {
            "is_active": _("Sync switched on"),
            "client_id": _("Application code"),
            "entity": _("A new chat creates"),
            "pipeline_id": _("Deal pipeline"),
            "handoff_stage": _("Stage when a manager takes over"),
            "rate_limit": _("Requests per second"),
            "burst": _("Burst of requests"),
            "technical_user_id": _("Bitrix24 user the inbox writes as"),
            "default_responsible_id": _("Responsible for new deals"),
            "connector_id": _("Open Channels connector"),
            "line_id": _("Open Channel line"),
            "sync_chats": _("New chats become a contact and a deal or lead"),
            "sync_handoffs": _("A handoff moves the deal and adds its summary to the timeline"),
            "sync_responsible": _("The manager a chat is assigned to becomes responsible"),
            "sync_back": _("Changes in Bitrix24 (stage, responsible, contact name) come back"),
            "sync_open_channels": _("Customer messages go to Open Channels, replies come back"),
        }
        help_texts = {
            "sync_chats": _("New chats → contact + lead/deal."),
            "sync_handoffs": _("Handoffs → stage + timeline."),
            "sync_responsible": _("Assigned manager → responsible."),
            "sync_back": _("Stage, responsible and contact name changes come back."),
            "sync_open_channels": _("App mode: customer messages to Open Channels, replies back."),
            "client_id": _(
                "Developer resources → Other → Local application: “Application code (client_id)”."
            ),
            "pipeline_id": _(
                "The number of the pipeline (CRM → Deals → the pipeline's settings); "
                "0 is the general one."
            ),
            "handoff_stage": _(
                "The stage's name as the pipeline shows it, or its code "
                "(PREPARATION; C3:PREPARATION in pipeline 3). Empty: the deal stays where it is."
            ),
            "rate_limit": _("Bitrix24's published limit: 2, or 5 on Enterprise plans."),
            "burst": _("Bitrix24's published burst: 50, or 250 on Enterprise plans."),
            "technical_user_id": _(
                "Its number in the user's profile address (/company/personal/"
                "user/7/ → 7): changes it makes are not echoed back. Empty: the webhook's user."
            ),
            "default_responsible_id": _(
                "A user number as above; empty: the user the inbox writes as."
            ),
            "connector_id": _("Set by the inbox when Open Channels are switched on; leave empty."),
            "line_id": _("Contact Center → the Open Channel's settings: its number."),
        }

    def __init__(self, *args: Any, mode: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mode = mode
        kept = set(MODE_FIELDS[mode])
        other = {n for names in MODE_FIELDS.values() for n in names} - kept
        if mode != Bitrix24Settings.Mode.APP:
            other |= set(APP_ONLY)
        for name in other:
            self.fields.pop(name, None)
            self.fields.pop(f"clear_{name}", None)
        for name, label in SECRET_LABELS.items():
            if name in self.fields:
                self.fields[name].label = label
        self.fields["mode"].widget = forms.HiddenInput()
        self.initial["mode"] = mode
        if self.is_bound:  # the mode is the one picked, whatever the hidden field says
            data = QueryDict(mutable=True)
            data.update(self.data)
            data["mode"] = mode
            self.data = data

    def _group(self, names: tuple[str, ...]) -> list[forms.BoundField]:
        shown: list[forms.BoundField] = []
        for name in names:
            if name in self.fields:
                shown.append(self[name])
                if f"clear_{name}" in self.fields:
                    shown.append(self[f"clear_{name}"])
        return shown

    def connection_fields(self) -> list[forms.BoundField]:
        return self._group(("is_active", *MODE_FIELDS[self.mode]))

    def sync_fields(self) -> list[forms.BoundField]:
        return self._group(SYNC_FIELDS)

    def deal_fields(self) -> list[forms.BoundField]:
        return self._group(DEAL_FIELDS)

    def advanced_fields(self) -> list[forms.BoundField]:
        return self._group(ADVANCED_FIELDS)
