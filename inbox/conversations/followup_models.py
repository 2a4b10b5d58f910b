"""The row of each follow-up the bot sent (or chose not to send) after its quote went
unanswered (`inbox/conversations/followups.py` writes them, `inbox/upkeep/followups.py` decides
when). Kept apart from `models.py` (which imports this module at its end); the foreign keys are
named by string, so nothing here imports the other models."""

from __future__ import annotations

from django.db import models


class Followup(models.Model):
    """One step of a chat's follow-up ladder after one quote: sent as text inside WhatsApp's
    window or as a template outside it, or skipped with the reason. One row per quote and step,
    so no step ever goes twice."""

    class Outcome(models.TextChoices):
        SENT = "sent", "Sent"
        SKIPPED = "skipped", "Skipped"

    class Via(models.TextChoices):
        TEXT = "text", "Text (window open)"
        TEMPLATE = "template", "Template (window closed)"
        NONE = "", "Not sent"

    chat = models.ForeignKey("inbox.Chat", on_delete=models.CASCADE, related_name="followups")
    # The bot's quote the step follows up.
    quote_message = models.ForeignKey("inbox.Message", on_delete=models.CASCADE, related_name="+")
    step = models.PositiveSmallIntegerField(help_text="1 = the first step of the ladder.")
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    via = models.CharField(max_length=8, choices=Via.choices, blank=True)
    reason = models.CharField(max_length=64, blank=True, help_text="Why it was skipped.")
    message = models.ForeignKey(
        "inbox.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "inbox"
        constraints = [
            models.UniqueConstraint(fields=["quote_message", "step"], name="followup_once")
        ]
        indexes = [models.Index(fields=["chat", "created_at"], name="followup_chat")]

    def __str__(self) -> str:
        return f"follow-up {self.step} of chat {self.chat_id} ({self.outcome})"
