"""What runs the installation rather than the conversations: operators' `Alert`s
(`inbox/upkeep/alerts.py`), users' `ApiToken`s for the JSON API, and the `Job` rows of long work
(`progress.py`).

Kept apart from `models.py` (which imports this module at its end, so Django registers them);
the foreign keys are named by string, so nothing here imports the other models.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Alert(models.Model):
    """Something an operator must look at: a silent number, a backlog, the model or the CRM down.

    At most one open alert per (business, kind, subject); raised and resolved only through
    `inbox/upkeep/alerts.py`. `business` is empty for installation-wide alerts (queues, model
    server)."""

    class Kind(models.TextChoices):
        CHANNEL_SILENT = "channel_silent", "Channel silent during working hours"
        QUEUE_BACKLOG = "queue_backlog", "Oldest job waiting too long"
        LLM_BREAKER_OPEN = "llm_breaker_open", "Model server unavailable (breaker open)"
        MODEL_MISCONFIGURED = "model_misconfigured", "Model server refuses the configuration"
        CRM_SYNC_FAILING = "crm_sync_failing", "Bitrix24 sync failing"

    business = models.ForeignKey(
        "inbox.Business", null=True, blank=True, on_delete=models.CASCADE, related_name="alerts"
    )
    kind = models.CharField(max_length=32, choices=Kind.choices)
    subject = models.CharField(
        max_length=200, blank=True, help_text="What is affected: channel:<id>, a queue, a replica."
    )
    message = models.TextField()
    raised_at = models.DateTimeField(default=timezone.now, db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    last_notified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-raised_at"]
        constraints = [
            # Two constraints because NULL business ids are distinct in a plain unique index.
            models.UniqueConstraint(
                fields=["business", "kind", "subject"],
                condition=Q(resolved_at__isnull=True, business__isnull=False),
                name="alert_unique_open",
            ),
            models.UniqueConstraint(
                fields=["kind", "subject"],
                condition=Q(resolved_at__isnull=True, business__isnull=True),
                name="alert_unique_open_global",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.subject}".strip()


class ApiToken(models.Model):
    """A user's token for the JSON API (/api/v1/): the same permissions as that user has in the
    inbox. Only the token's SHA-256 is stored; the token is shown once, when it is made."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=200, blank=True, help_text="What the token is for.")
    prefix = models.CharField(max_length=16, help_text="The token's first characters.")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user}{', ' + self.name if self.name else ''})"


class Job(models.Model):
    """Progress of one piece of long work (a price-list import, a first CRM sync, a
    reconciliation pass, a data purge), written by the worker doing it through
    `inbox.conversations.progress` and shown live on that work's page."""

    class Kind(models.TextChoices):
        PRICE_IMPORT = "price_import", _("Price-list import")
        CRM_FULL_SYNC = "crm_full_sync", _("Bitrix24: every chat checked against the CRM")
        CRM_RECONCILE = "crm_reconcile", _("Bitrix24: reconciliation pass")
        PURGE = "purge", _("Data purge (retention)")

    class State(models.TextChoices):
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    business = models.ForeignKey("inbox.Business", on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.RUNNING)
    total = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: not known yet.")
    done = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["business", "kind", "-id"], name="job_latest")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.state})"

    @property
    def percent(self) -> int | None:
        if not self.total:
            return None
        return min(100, self.done * 100 // self.total)
