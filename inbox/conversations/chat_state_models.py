"""Where a chat stands: who holds it (`Owner`: the bot, waiting, a person) and its status
(`ChatStatus`: open, snoozed, resolved), the causes of their changes, the `ChatTransition` audit
row each change leaves (`audit.py`), and each manager's `ReadMarker` (`reading.py`).

Imported by `models.py` (the chat's own fields use `Owner` and `ChatStatus`); the foreign keys
are named by string, so nothing here imports the other models.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Owner(models.TextChoices):
    BOT = "bot", _("Bot")
    PENDING_HUMAN = "pending_human", _("Waiting for a human")
    HUMAN = "human", _("Human")


class ChatStatus(models.TextChoices):
    """Where a chat stands in the managers' work, apart from who speaks (`Owner`)."""

    OPEN = "open", _("Open")
    SNOOZED = "snoozed", _("Snoozed")
    RESOLVED = "resolved", _("Resolved")


class OwnershipCause(models.TextChoices):
    """Why `Chat.owner` changed: the transitions of `inbox/conversations/ownership.py`."""

    REQUEST_HUMAN = "request_human", _("Assistant handed over")
    TAKE_OVER = "take_over", _("Manager took over")
    MANAGER_REPLIED = "manager_replied", _("Manager replied")
    RELEASE = "release", _("Released to the bot")
    IDLE_RELEASE = "idle_release", _("Released: no manager message")
    RESOLVED = "resolved", _("Resolved: returned to the bot")
    RESOLVED_UNASSIGNED = "resolved_unassigned", _("Resolved: waits for a human")


class StatusCause(models.TextChoices):
    """Why `Chat.status` changed: the changes of `inbox/conversations/status.py`."""

    RESOLVE = "resolve", _("Resolved")
    SNOOZE = "snooze", _("Snoozed")
    REOPEN = "reopen", _("Reopened")
    SNOOZE_ENDED = "snooze_ended", _("Snooze ended")
    CUSTOMER_WROTE = "customer_wrote", _("Customer wrote")


# Every cause a `ChatTransition` row may carry, grouped as the admin's filter shows them.
TRANSITION_CAUSES = [("Owner", OwnershipCause.choices), ("Status", StatusCause.choices)]


class ChatTransition(models.Model):
    """Audit row for every change of a chat's owner (`Chat.owner`, written by
    `inbox/conversations/ownership.py`) and of its status (`Chat.status`, by
    `inbox/conversations/status.py`), both through `inbox/conversations/audit.py`.

    An owner change has `cause` in `OwnershipCause` and `from_owner` ≠ `to_owner`; a status change
    has `cause` in `StatusCause`, `from_owner` = `to_owner` and `from_status`/`to_status` set
    (`is_status_change`). The table keeps the name it had as `OwnershipTransition` (migration
    0013 renamed the model only)."""

    chat = models.ForeignKey("inbox.Chat", on_delete=models.CASCADE, related_name="transitions")
    from_owner = models.CharField(max_length=16, choices=Owner.choices)
    to_owner = models.CharField(max_length=16, choices=Owner.choices)
    cause = models.CharField(max_length=32, choices=TRANSITION_CAUSES)
    reason = models.CharField(max_length=64, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    actor_label = models.CharField(
        max_length=64, blank=True, help_text="bot, phone, system, or the manager's name."
    )
    version = models.PositiveBigIntegerField(help_text="Chat.version after the transition.")
    from_status = models.CharField(max_length=16, choices=ChatStatus.choices, blank=True)
    to_status = models.CharField(max_length=16, choices=ChatStatus.choices, blank=True)
    snoozed_until = models.DateTimeField(null=True, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "inbox_ownershiptransition"
        ordering = ["id"]
        indexes = [models.Index(fields=["chat", "at"], name="transition_report_chat")]

    def __str__(self) -> str:
        if self.to_status:
            return f"{self.from_status} → {self.to_status} ({self.cause})"
        return f"{self.from_owner} → {self.to_owner} ({self.cause})"

    @property
    def is_status_change(self) -> bool:
        return bool(self.to_status)


class ReadMarker(models.Model):
    """How far one manager has read one chat: the unread badge each manager sees is the chat's
    customer messages since this marker (inbox/conversations/reading.py)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="read_markers"
    )
    chat = models.ForeignKey("inbox.Chat", on_delete=models.CASCADE, related_name="read_markers")
    last_read_id = models.PositiveBigIntegerField(
        default=0, help_text="The last customer message this manager has seen."
    )
    read_count = models.PositiveIntegerField(
        default=0, help_text="Chat.customer_messages when this manager last read the chat."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "chat"], name="read_marker_unique_user_chat")
        ]

    def __str__(self) -> str:
        return f"{self.user} read chat #{self.chat_id} to {self.last_read_id}"
