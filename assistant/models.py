"""What the assistant knows and how each business wants it to behave.

Price lists are versioned: an import writes a whole new version and flips `current_version` in
one transaction, so a broken upload never leaves a half-written list behind and the previous
version stays for comparison. A business has one list; a channel (a branch with other prices)
may have an override list whose rows replace the business's rows with the same SKU (or name).
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from inbox.conversations.models import Business, Channel, Chat, Handoff, HandoffReason, Turn
from inbox.platform.fields import EncryptedTextField

# Reasons the model (or the catalogue assistant) may choose, with what each means. A business
# edits the descriptions, removes reasons or adds its own in AssistantSettings.handoff_reasons.
DEFAULT_HANDOFF_REASONS: list[dict[str, str]] = [
    {
        "code": HandoffReason.ASKS_FOR_HUMAN,
        "description": "The customer asks for a person or a manager.",
    },
    {
        "code": HandoffReason.READY_TO_BUY,
        "description": "The customer wants to buy, order, book or pay.",
    },
    {
        "code": HandoffReason.NON_STANDARD_TERMS,
        "description": "Discounts, wholesale, credit, custom orders or other terms not in "
        "the price list.",
    },
    {
        "code": HandoffReason.COMPLAINT,
        "description": "A complaint, a return, or a clearly unhappy customer.",
    },
    {
        "code": HandoffReason.OUTSIDE_KNOWLEDGE_BASE,
        "description": "The question is still not answered by the price list after one "
        "clarifying question.",
    },
]

# Reasons the system itself uses; not offered to the model as choices.
SYSTEM_HANDOFF_REASONS: dict[HandoffReason, str] = {
    HandoffReason.LATE: "The customer's message waited longer than the channel's late-answer "
    "cutoff.",
    HandoffReason.GUARDRAIL: "The reply named a price, discount or deadline the price list does "
    "not back.",
    HandoffReason.MODEL_ERROR: "The model's answer was invalid even after one repair attempt.",
    HandoffReason.MODEL_UNAVAILABLE: "No model endpoint answered (down, overloaded or circuit "
    "open).",
    HandoffReason.MODEL_MISCONFIGURED: "The model server refused the request as configured (API "
    "key, model name, context length or schema).",
    HandoffReason.VOICE_UNCLEAR: "A voice note could not be understood well enough, twice.",
    HandoffReason.TRANSCRIPTION_FAILED: "A voice note could not be transcribed.",
    HandoffReason.WINDOW_CLOSED: "WhatsApp's 24-hour customer-service window closed before the "
    "answer: only a template can reach the customer.",
}

DEFAULT_FORBIDDEN_PROMISES: list[str] = [
    "free delivery",
    "бесплатная доставка",
    "бесплатно доставим",
    "money-back guarantee",
    "гарантия возврата денег",
    "lifetime warranty",
    "пожизненная гарантия",
]


def default_handoff_reasons() -> list[dict[str, str]]:
    return [dict(reason) for reason in DEFAULT_HANDOFF_REASONS]


def default_forbidden_promises() -> list[str]:
    return list(DEFAULT_FORBIDDEN_PROMISES)


class AssistantSettings(models.Model):
    """How the assistant of one business behaves. Missing row = the defaults."""

    business = models.OneToOneField(
        Business, on_delete=models.CASCADE, related_name="assistant_settings"
    )
    business_rules = models.TextField(
        blank=True,
        help_text="Tone and rules in plain words, e.g. delivery terms, opening hours, "
        "'address customers formally'. The model may quote facts written here.",
    )
    handoff_reasons = models.JSONField(
        default=default_handoff_reasons,
        blank=True,
        help_text='List of {"code": ..., "description": ...}: when the assistant hands a chat '
        "to a manager.",
    )
    forbidden_promises = models.JSONField(
        default=default_forbidden_promises,
        blank=True,
        help_text="Phrases the assistant must never send (one per item, case-insensitive).",
    )
    prompt_version = models.CharField(
        max_length=16, default="v1", help_text="Folder of prompt templates in assistant/prompts/."
    )
    replay_gate = models.BooleanField(
        default=False,
        help_text="A change whose replay raises guardrail blocks or handoffs by more than the "
        "threshold needs an explicit confirmation before it is applied.",
    )
    replay_gate_threshold = models.FloatField(
        default=0.05,
        help_text="The most the share of guardrail blocks, or of handoffs, may rise "
        "(0.05 = 5 percentage points).",
    )
    # The business's own model endpoint; blank base URL = the installation's (LLM_BASE_URL).
    # `assistant.llm.business` builds the client; the URL passes the egress allow-list.
    model_base_url = models.CharField(
        max_length=500,
        blank=True,
        help_text="An OpenAI-compatible base URL, e.g. https://llm.example.com/v1. Empty: the "
        "installation's model.",
    )
    model_name = models.CharField(max_length=200, blank=True)
    model_structured_output = models.CharField(
        max_length=16,
        choices=[("json_schema", "json_schema (vLLM)"), ("json_object", "json_object")],
        default="json_schema",
    )
    model_api_key = EncryptedTextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "assistant settings"
        verbose_name_plural = "assistant settings"

    def __str__(self) -> str:
        return f"Assistant settings of {self.business}"

    def reason_codes(self) -> list[str]:
        return [str(r.get("code", "")) for r in self.reasons() if r.get("code")]

    def reasons(self) -> list[dict[str, str]]:
        raw: Any = self.handoff_reasons
        if not isinstance(raw, list):
            return default_handoff_reasons()
        return [
            {"code": str(r.get("code", "")).strip(), "description": str(r.get("description", ""))}
            for r in raw
            if isinstance(r, dict) and str(r.get("code", "")).strip()
        ]

    def promises(self) -> list[str]:
        raw: Any = self.forbidden_promises
        return [str(p).strip() for p in raw if str(p).strip()] if isinstance(raw, list) else []


class PriceList(models.Model):
    """The business's list (channel empty) or one channel's override list."""

    business = models.ForeignKey(Business, on_delete=models.CASCADE, related_name="price_lists")
    channel = models.ForeignKey(
        Channel,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="price_lists",
        help_text="Empty: the business's list. Set: this channel's overrides.",
    )
    current_version = models.ForeignKey(
        "PriceListVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["business"], condition=Q(channel=None), name="pricelist_one_per_business"
            ),
            models.UniqueConstraint(
                fields=["channel"], condition=~Q(channel=None), name="pricelist_one_per_channel"
            ),
        ]

    def __str__(self) -> str:
        scope = f"channel {self.channel.name}" if self.channel_id and self.channel else "business"
        return f"Price list of {self.business} ({scope})"


class PriceListVersion(models.Model):
    price_list = models.ForeignKey(PriceList, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    source_name = models.CharField(max_length=255, blank=True)
    source_sha256 = models.CharField(max_length=64, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    skipped_rows = models.PositiveIntegerField(
        default=0, help_text="Bad rows of the file the admin chose to leave out."
    )
    restored_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Set when this version is a rollback: a copy of that earlier version.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["price_list", "number"], name="pricelist_version_unique"
            )
        ]

    def __str__(self) -> str:
        return f"v{self.number} of {self.price_list} ({self.item_count} items)"


class Availability(models.TextChoices):
    IN_STOCK = "in_stock", _("In stock")
    OUT_OF_STOCK = "out_of_stock", _("Out of stock")
    ON_ORDER = "on_order", _("On order")
    UNKNOWN = "unknown", _("Not stated")


class PriceItem(models.Model):
    version = models.ForeignKey(PriceListVersion, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    sku = models.CharField(max_length=64, blank=True)
    name = models.CharField(max_length=300)
    price = models.DecimalField(max_digits=14, decimal_places=2)
    currency = models.CharField(max_length=8, blank=True)
    unit = models.CharField(max_length=32, blank=True)
    description = models.TextField(blank=True)
    availability = models.CharField(
        max_length=16, choices=Availability.choices, default=Availability.UNKNOWN
    )
    availability_note = models.CharField(max_length=200, blank=True)
    aliases = models.CharField(
        max_length=500,
        blank=True,
        help_text="Other names customers use for this item, comma-separated (any language): "
        "the catalogue assistant and the guardrail match them like the name.",
    )

    class Meta:
        ordering = ["version", "position"]
        indexes = [models.Index(fields=["version", "sku"])]

    def __str__(self) -> str:
        return f"{self.sku or '-'} {self.name}: {self.price} {self.currency}"

    def alias_list(self) -> tuple[str, ...]:
        return split_aliases(self.aliases)


def split_aliases(text: str) -> tuple[str, ...]:
    """ "диван Бостон, Boston sofa; угловой" → three aliases (commas, semicolons, | or lines)."""
    parts = (" ".join(p.split()) for p in re.split(r"[,;|\n]", text or ""))
    return tuple(dict.fromkeys(p for p in parts if p))


class KnowledgeGap(Handoff):
    """Handoffs with reason `outside_knowledge_base`, reviewed weekly to grow the price list and
    the business rules (a proxy of inbox.Handoff: no table of its own)."""

    class Meta:
        proxy = True
        verbose_name = "knowledge gap (outside the price list)"
        verbose_name_plural = "knowledge gaps (weekly review)"


class ReplayRun(models.Model):
    """Past turns of one business run again with a candidate change (a price list not applied,
    edited rules, another model endpoint). Nothing is sent; `assistant.replay` owns the rules."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")
        APPLIED = "applied", _("Applied")
        DISCARDED = "discarded", _("Discarded")

    business = models.ForeignKey(Business, on_delete=models.CASCADE, related_name="replay_runs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # {"days": 7, "channel_id": 3, "reason": "guardrail", "chat_ids": [..], "limit": 200}
    selection = models.JSONField(default=dict, blank=True)
    # {"price_list": {...rows...}, "rules": {...}, "model": {"base_url", "model", ...}}
    candidate = models.JSONField(default=dict, blank=True)
    model_api_key = EncryptedTextField(blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-id"]
        permissions = [
            ("view_replay_phones", "See customer phone numbers in replay reports"),
        ]

    def __str__(self) -> str:
        return f"replay #{self.pk} of {self.business} ({self.status})"


class ReplayTurn(models.Model):
    """One recorded turn of a replay: what the assistant said then and would say now."""

    class Change(models.TextChoices):
        DECISION = "changed_decision", _("Changed decision")
        AMOUNT = "changed_amount", _("Changed amount")
        BLOCKED = "newly_blocked", _("Newly blocked by the guardrail")
        UNCHANGED = "unchanged", _("Unchanged")

    run = models.ForeignKey(ReplayRun, on_delete=models.CASCADE, related_name="turns")
    turn = models.ForeignKey(Turn, null=True, on_delete=models.SET_NULL, related_name="+")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="+")
    customer_text = models.TextField(blank=True)
    change = models.CharField(max_length=24, choices=Change.choices)
    # {"action", "reason", "reply", "sent", "amounts": [{"text", "ok"}], "blocked": [...]}
    then = models.JSONField(default=dict)
    now = models.JSONField(default=dict)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"replayed turn #{self.turn_id} ({self.change})"
