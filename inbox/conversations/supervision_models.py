"""The trust loop's rows: a bot reply held as a `Draft` until a person approves, edits or
rejects it (`drafts.py`), and a manager's `MessageFlag` on a bot message (`flags.py`).

Kept apart from `models.py` (which imports this module at its end, so Django registers them);
the foreign keys are named by string, so nothing here imports the other models.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Draft(models.Model):
    """A bot reply that waits for a person (the channel's `approval`): approved as is, edited
    and sent, rejected, superseded by a newer customer message, or expired. Written only by
    `inbox.conversations.drafts`."""

    class State(models.TextChoices):
        PENDING = "pending", "Waiting for approval"
        APPROVED = "approved", "Approved as is"
        EDITED = "edited", "Edited and sent"
        REJECTED = "rejected", "Rejected"
        SUPERSEDED = "superseded", "Superseded by a newer message"
        EXPIRED = "expired", "Not approved in time"

    chat = models.ForeignKey("inbox.Chat", on_delete=models.CASCADE, related_name="drafts")
    turn = models.ForeignKey(
        "inbox.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="drafts"
    )
    text = models.TextField()
    sent_text = models.TextField(blank=True, help_text="What went out, when a person edited it.")
    generated_at_version = models.PositiveBigIntegerField()
    answered_up_to = models.PositiveBigIntegerField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    message = models.ForeignKey(
        "inbox.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["state", "created_at"], name="draft_state_created")]

    def __str__(self) -> str:
        return f"draft #{self.pk} chat #{self.chat_id} {self.state}"


class MessageFlag(models.Model):
    """A manager's mark that a bot message was wrong, and how: what the weekly review gathers
    to fix the price list, the rules or the prompt. Written by `inbox.conversations.flags`."""

    class Category(models.TextChoices):
        WRONG_ITEM = "wrong_item", _("Wrong item")
        WRONG_AMOUNT = "wrong_amount", _("Wrong amount")
        SHOULD_HAVE_HANDED_OFF = "should_have_handed_off", _("Should have handed off")
        BAD_WORDING = "bad_wording", _("Bad wording")

    message = models.ForeignKey("inbox.Message", on_delete=models.CASCADE, related_name="flags")
    chat = models.ForeignKey("inbox.Chat", on_delete=models.CASCADE, related_name="message_flags")
    flagged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    category = models.CharField(max_length=32, choices=Category.choices)
    note = models.TextField(blank=True, max_length=2000)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Set when an admin fixed it from the review (`inbox.web.settings.review_fixes`): an open
    # flag has none, and only open flags are listed.
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolution = models.CharField(max_length=300, blank=True, help_text="Which fix, in words.")

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"flag {self.category} message #{self.message_id}"
