"""Django admin for the assistant: settings per business, price lists and their versions (the
upload itself is the inbox's settings page), and the weekly review of questions the price list
could not answer."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils import timezone

from assistant.knowledge.price_import import update_aliases
from assistant.models import (
    AssistantSettings,
    KnowledgeGap,
    PriceItem,
    PriceList,
    PriceListVersion,
)
from inbox.conversations.models import HandoffReason


@admin.register(AssistantSettings)
class AssistantSettingsAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("business", "prompt_version", "updated_at")
    search_fields = ("business__name",)
    # The business's model API key is set on the inbox's Assistant settings page (write-only).
    exclude = ("model_api_key",)


class PriceItemInline(admin.TabularInline):  # type: ignore[type-arg]
    """The rows of a version; only the aliases (other names customers use) are editable: the
    rest comes from the imported file."""

    model = PriceItem
    extra = 0
    can_delete = False
    fields = (
        "sku",
        "name",
        "aliases",
        "price",
        "currency",
        "unit",
        "availability",
        "availability_note",
    )
    readonly_fields = tuple(f for f in fields if f != "aliases")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PriceListVersion)
class PriceListVersionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("__str__", "source_name", "item_count", "created_by", "created_at")
    list_filter = ("price_list__business",)
    readonly_fields = (
        "price_list",
        "number",
        "source_name",
        "source_sha256",
        "item_count",
        "skipped_rows",
        "restored_from",
        "created_by",
        "created_at",
    )
    inlines = [PriceItemInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # versions are written by an import only

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        """Edited aliases go through price_import.update_aliases (the list's knowledge is
        rebuilt); nothing else of a version is written here."""
        changed = []
        for item_form in formset.forms:
            if item_form.instance.pk and "aliases" in item_form.changed_data:
                update_aliases(item_form.instance, item_form.cleaned_data.get("aliases", ""))
                changed.append((item_form.instance, ["aliases"]))
        # What the admin's change message reads (save_formset would have set these).
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], changed, []


@admin.register(PriceList)
class PriceListAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("business", "channel", "current_version", "updated_at")
    list_filter = ("business",)
    readonly_fields = ("business", "channel", "current_version", "updated_at")
    change_list_template = "admin/assistant/pricelist/change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # lists come into being through an import

    def get_urls(self) -> list[URLPattern]:
        custom = [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="assistant_pricelist_import",
            )
        ]
        return custom + super().get_urls()

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Price lists are uploaded on the inbox's settings page, where a worker reads the file
        (assistant.knowledge.price_upload.submit), never the web process: this admin URL, which
        the list links to, leads there."""
        return HttpResponseRedirect(reverse("settings_price_list"))


class WeekFilter(admin.SimpleListFilter):
    title = "week"
    parameter_name = "week"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("0", "Last 7 days"), ("1", "7–14 days ago"), ("4", "Last 4 weeks")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        value = self.value()
        if value == "0":
            return queryset.filter(created_at__gte=now - timedelta(days=7))
        if value == "1":
            return queryset.filter(
                created_at__gte=now - timedelta(days=14), created_at__lt=now - timedelta(days=7)
            )
        if value == "4":
            return queryset.filter(created_at__gte=now - timedelta(days=28))
        return queryset


@admin.register(KnowledgeGap)
class KnowledgeGapAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Every handoff with reason outside_knowledge_base: what customers asked that the price list
    and the business rules could not answer. Review weekly; add items or rules."""

    list_display = ("created_at", "business", "chat", "summary", "asked_about")
    list_filter = (WeekFilter, "chat__channel__business", "chat__channel")
    date_hierarchy = "created_at"
    search_fields = ("summary",)
    readonly_fields = ("chat", "reason", "summary", "facts", "message_to_customer", "details")
    list_select_related = ("chat__channel__business",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).filter(reason=HandoffReason.OUTSIDE_KNOWLEDGE_BASE)

    @admin.display(description="business")
    def business(self, obj: KnowledgeGap) -> str:
        return obj.chat.channel.business.name

    @admin.display(description="asked about")
    def asked_about(self, obj: KnowledgeGap) -> str:
        items = [str(i.get("name", "")) for i in obj.facts_items() if isinstance(i, dict)]
        return ", ".join(i for i in items if i)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
