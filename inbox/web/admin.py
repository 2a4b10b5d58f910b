"""Django admin for the conversation core, for managers who are not developers.

Owner changes are read-only here: they go through `inbox/conversations/ownership.py` (the
dashboard's Take over / Release buttons), never through a form field.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest

from inbox.conversations.models import (
    Alert,
    ApiToken,
    Business,
    Channel,
    Chat,
    ChatTransition,
    Handoff,
    Membership,
    Message,
)
from inbox.platform import egress
from inbox.upkeep import alerts
from inbox.web import api_tokens, login_limit
from inbox.web.forms import WriteOnlySecrets, secret_field


class ChannelAdminForm(WriteOnlySecrets):
    """A channel's settings; its tokens are write-only."""

    secret_fields = ("access_token", "bridge_token")
    access_token = secret_field()
    bridge_token = secret_field(
        "The bridge's bearer token; for Evolution API the instance token, for WAHA the API key "
        "(also the key of its webhook signatures)."
    )
    bridge_url = forms.URLField(
        required=False,
        assume_scheme="https",
        help_text="Base URL of the bridge, Evolution API or WAHA, as the inbox reaches it.",
    )

    def clean_bridge_url(self) -> str:
        url = str(self.cleaned_data.get("bridge_url") or "")
        if url:
            try:
                egress.check(url)
            except egress.EgressRefused as exc:
                raise forms.ValidationError(egress.explain(exc)) from None
        return url

    class Meta:
        model = Channel
        fields = [
            "business",
            "name",
            "kind",
            "is_active",
            "language",
            "phone_number_id",
            "display_phone_number",
            "access_token",
            "waba_id",
            "bridge_url",
            "bridge_token",
            "gateway_instance",
            "debounce_seconds",
            "idle_release_hours",
            "late_answer_cutoff_minutes",
            "voice_confidence_threshold",
            "working_hours",
            "silent_alert_minutes",
            "read_receipts",
            "typing_indicator",
            "approval",
            "approval_timeout_minutes",
        ]


class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Membership
    extra = 0
    filter_horizontal = ("channels",)


@admin.register(Business)
class BusinessAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "timezone", "language", "retention_days", "created_at")
    search_fields = ("name",)
    inlines = [MembershipInline]


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = ChannelAdminForm
    list_display = ("name", "business", "kind", "phone_number_id", "is_active", "last_event_at")
    list_filter = ("kind", "is_active", "business")
    search_fields = ("name", "phone_number_id", "display_phone_number")
    readonly_fields = ("last_event_at", "created_at")
    fieldsets = (
        (None, {"fields": ("business", "name", "kind", "is_active", "language")}),
        ("Cloud API", {"fields": ("phone_number_id", "display_phone_number", "access_token")}),
        (
            "Linked-device bridge, Evolution API or WAHA",
            {"fields": ("bridge_url", "bridge_token", "gateway_instance")},
        ),
        (
            "Timing",
            {
                "fields": (
                    "debounce_seconds",
                    "idle_release_hours",
                    "late_answer_cutoff_minutes",
                    "voice_confidence_threshold",
                    "working_hours",
                    "silent_alert_minutes",
                )
            },
        ),
        ("Supervised replies", {"fields": ("approval", "approval_timeout_minutes")}),
        ("Health", {"fields": ("last_event_at", "created_at")}),
    )


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("user", "business", "role")
    list_filter = ("role", "business")
    filter_horizontal = ("channels",)


class MessageInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Message
    extra = 0
    can_delete = False
    fields = ("created_at", "author", "kind", "text", "transcript", "status")
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class TransitionInline(admin.TabularInline):  # type: ignore[type-arg]
    model = ChatTransition
    extra = 0
    can_delete = False
    fields = ("at", "from_owner", "to_owner", "cause", "reason", "actor_label", "version")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Chat)
class ChatAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "__str__",
        "channel",
        "owner",
        "assigned_to",
        "last_customer_at",
        "last_manager_at",
    )
    list_filter = ("owner", "channel__business", "channel")
    search_fields = ("customer_name", "customer_phone", "customer_key")
    readonly_fields = (
        "owner",
        "version",
        "answered_up_to",
        "last_customer_at",
        "last_manager_at",
        "last_message_at",
        "owner_changed_at",
        "created_at",
    )
    inlines = [TransitionInline, MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("id", "chat", "direction", "author", "kind", "status", "created_at")
    list_filter = ("direction", "author", "kind", "status", "channel")
    search_fields = ("text", "transcript", "provider_message_id")
    readonly_fields = ("created_at", "purged_at")
    raw_id_fields = ("chat", "sent_by")


@admin.register(ChatTransition)
class ChatTransitionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("at", "chat", "from_owner", "to_owner", "cause", "reason", "actor_label")
    list_filter = ("cause", "to_owner")
    raw_id_fields = ("chat", "actor")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Handoff)
class HandoffAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("created_at", "chat", "reason")
    list_filter = ("reason",)
    search_fields = ("summary",)
    raw_id_fields = ("chat",)


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Alerts are raised and resolved by `inbox/upkeep/alerts.py`; here they are read, and an
    operator may mark one resolved (the next check raises it again if the cause is still there)."""

    list_display = ("raised_at", "kind", "subject", "business", "resolved_at", "last_notified_at")
    list_filter = ("kind", ("resolved_at", admin.EmptyFieldListFilter), "business")
    search_fields = ("subject", "message")
    readonly_fields = (
        "business",
        "kind",
        "subject",
        "message",
        "raised_at",
        "last_notified_at",
    )
    actions = ["mark_resolved"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Mark selected alerts resolved")
    def mark_resolved(self, request: HttpRequest, queryset: Any) -> None:
        for alert in queryset.filter(resolved_at__isnull=True):
            alerts.resolve_alert(alert.business_id, alert.kind, subject=alert.subject)


# --- JSON API tokens and the admin login's rate limit (dashboard) -----------------------------

admin.site.login_form = login_limit.RateLimitedAdminAuthenticationForm


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Adding a token shows it once, in the confirmation message; only its hash is kept."""

    list_display = ("prefix", "user", "name", "is_active", "created_at", "last_used_at")
    list_filter = ("is_active",)
    search_fields = ("name", "prefix", "user__username")
    raw_id_fields = ("user",)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["user", "name"]
        return ["user", "name", "prefix", "is_active", "created_at", "last_used_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return []
        return ["user", "prefix", "created_at", "last_used_at"]

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        row, token = api_tokens.create_token(obj.user, obj.name)
        obj.pk = row.pk
        obj.prefix = row.prefix
        obj.token_hash = row.token_hash
        obj.created_at = row.created_at
        messages.warning(
            request, f"The new API token (copy it now, it is not shown again): {token}"
        )
