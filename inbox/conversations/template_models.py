"""The rows of WhatsApp message templates and of replies waiting for the customer's return.

Kept apart from `models.py` (which imports this module at its end, so Django registers them);
the foreign keys are named by string, so nothing here imports the other models.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class MessageTemplate(models.Model):
    """A template of a Cloud API channel's WhatsApp Business Account, as the Graph API last
    said (`integrations/whatsapp/template_sync.py`) or a status webhook changed it."""

    class Category(models.TextChoices):
        MARKETING = "MARKETING", _("Marketing")
        UTILITY = "UTILITY", _("Utility")
        AUTHENTICATION = "AUTHENTICATION", _("Authentication")

    class Status(models.TextChoices):
        APPROVED = "APPROVED", _("Approved")
        PENDING = "PENDING", _("Pending review")
        REJECTED = "REJECTED", _("Rejected")
        PAUSED = "PAUSED", _("Paused")
        DISABLED = "DISABLED", _("Disabled")

    channel = models.ForeignKey("inbox.Channel", on_delete=models.CASCADE, related_name="templates")
    name = models.CharField(max_length=512)
    language = models.CharField(max_length=16)
    category = models.CharField(max_length=16, choices=Category.choices)
    status = models.CharField(max_length=16, choices=Status.choices)
    components = models.JSONField(default=list, blank=True)
    # "POSITIONAL" ({{1}}) or "NAMED" ({{first_name}}), as the Graph API gives it.
    parameter_format = models.CharField(max_length=16, blank=True)
    template_id = models.CharField(max_length=64, blank=True)
    reason = models.CharField(max_length=200, blank=True, help_text="Why it was paused or refused.")
    synced_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "inbox"
        ordering = ["name", "language"]
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "name", "language"], name="template_unique_per_channel"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.language})"


class PendingReply(models.Model):
    """A manager's free-text answer written after the 24-hour window closed: kept, not sent,
    until the customer writes again (`inbox/conversations/pending_replies.py`)."""

    chat = models.OneToOneField("inbox.Chat", on_delete=models.CASCADE, related_name="pending")
    text = models.TextField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reengage_message_id = models.PositiveBigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "inbox"

    def __str__(self) -> str:
        return f"pending reply of chat {self.chat_id}"
