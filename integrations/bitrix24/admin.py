"""Admin for the Bitrix24 sync. The settings form is the business admins' one (setup/forms.py)
with the staff-only fields: secrets are write-only there, an empty input keeps the stored one."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from inbox.web.forms import secret_field
from integrations.bitrix24 import tasks
from integrations.bitrix24.models import (
    Bitrix24Settings,
    ConnectorMessage,
    CrmLink,
    HandoffSync,
    PendingPull,
    UserLink,
)
from integrations.bitrix24.setup import config
from integrations.bitrix24.setup.forms import SECRETS, Bitrix24SettingsForm


class Bitrix24AdminForm(Bitrix24SettingsForm):
    """Every setting, for staff: the settings form plus the OAuth tokens and the technical
    fields. The admin saves the row itself (not through `config.configure`), so the webhook URL
    is checked here and the technical user taken from it when none is given."""

    secret_fields = (*SECRETS, "access_token", "refresh_token")
    access_token = secret_field()
    refresh_token = secret_field()
    oauth_server_url = forms.URLField(assume_scheme="https", initial="https://oauth.bitrix.info")
    field_order = None  # the page's layout; here Meta.fields is the order

    class Meta(Bitrix24SettingsForm.Meta):
        fields = [
            "business",
            "is_active",
            "mode",
            "webhook_url",
            "portal_url",
            "application_token",
            "client_id",
            "client_secret",
            "access_token",
            "refresh_token",
            "oauth_server_url",
            "member_id",
            "entity",
            "pipeline_id",
            "handoff_stage",
            "rate_limit",
            "burst",
            "technical_user_id",
            "default_responsible_id",
            "originator_id",
            "auth_connector",
            "connector_id",
            "line_id",
            "field_map",
            "sync_chats",
            "sync_handoffs",
            "sync_responsible",
            "sync_back",
            "sync_open_channels",
        ]

    def clean_webhook_url(self) -> str:
        value = str(self.cleaned_data.get("webhook_url") or "")
        if not value:
            return value
        try:
            return config.parse_webhook_url(value).url
        except config.ConfigError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("webhook_url") and not cleaned.get("technical_user_id"):
            cleaned["technical_user_id"] = config.parse_webhook_url(cleaned["webhook_url"]).user_id
        return cleaned


@admin.register(Bitrix24Settings)
class Bitrix24SettingsAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = Bitrix24AdminForm
    list_display = (
        "business",
        "mode",
        "portal_host",
        "entity",
        "pipeline_id",
        "is_active",
        "last_check_at",
    )
    list_filter = ("mode", "is_active", "entity")
    readonly_fields = (
        "last_check",
        "last_check_at",
        "reconcile_checkpoint",
        "contact_checkpoint",
        "installed_at",
        "created_at",
        "updated_at",
    )
    actions = ["test_connection", "full_sync"]

    @admin.action(description="Test connection (runs in a worker; see Last check)")
    def test_connection(self, request: HttpRequest, queryset: QuerySet[Bitrix24Settings]) -> None:
        for cfg in queryset:
            tasks.test_connection_task.delay(cfg.business_id)
        self.message_user(request, "Connection test queued; reload to see the result.")

    @admin.action(description="Full sync (check every chat against the CRM)")
    def full_sync(self, request: HttpRequest, queryset: QuerySet[Bitrix24Settings]) -> None:
        total = sum(config.request_full_sync(cfg.business_id) for cfg in queryset)
        self.message_user(request, f"{total} chats queued for a full sync.", messages.INFO)


@admin.register(CrmLink)
class CrmLinkAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "chat",
        "business",
        "entity_type",
        "entity_id",
        "stage_name",
        "stage_semantics",
        "responsible_id",
        "needs_sync",
        "attempts",
        "last_error",
    )
    list_filter = ("business", "stage_semantics", "needs_sync", "remote_deleted")
    search_fields = ("entity_id", "contact_id", "chat__customer_name")
    raw_id_fields = ("chat", "responsible_user")
    actions = ["retry_now"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Retry now")
    def retry_now(self, request: HttpRequest, queryset: QuerySet[CrmLink]) -> None:
        businesses = set(queryset.values_list("business_id", flat=True))
        queryset.update(needs_sync=True, next_attempt_at=None)
        for business_id in businesses:
            tasks.push.delay(business_id)
        self.message_user(request, "Queued.")


@admin.register(HandoffSync)
class HandoffSyncAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("handoff", "link", "stage_done", "comment_id", "done_at", "created_at")
    raw_id_fields = ("handoff", "link")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(PendingPull)
class PendingPullAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "business",
        "entity_type",
        "entity_id",
        "event",
        "source",
        "requested_at",
        "attempts",
        "last_error",
    )
    list_filter = ("entity_type", "source")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(UserLink)
class UserLinkAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("user", "business", "bitrix_user_id")
    list_filter = ("business",)
    raw_id_fields = ("user",)


@admin.register(ConnectorMessage)
class ConnectorMessageAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("id", "business", "direction", "chat", "state", "reason", "created_at")
    list_filter = ("direction", "state")
    raw_id_fields = ("chat", "message")
    readonly_fields = ("text",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
