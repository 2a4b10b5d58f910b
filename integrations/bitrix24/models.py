"""Bitrix24 sync state: per-business settings, the CRM link of each chat, and the outbox rows
that make every sync retryable and idempotent; and the closed sets the sync compares against
(`CrmEntity`, each model's choices), so no module spells one of them as a bare string."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from inbox.conversations.models import Business, Chat, Handoff, Message
from inbox.platform.fields import EncryptedTextField


class CrmEntity(models.TextChoices):
    """The CRM objects the sync reads and writes. The value is how the inbox stores and logs
    one (`CrmLink.entity_type`, `PendingPull.entity_type`); `type_id` is its `entityTypeId` in
    Bitrix24's `crm.item.*` methods."""

    LEAD = "lead", "Lead"
    DEAL = "deal", "Deal"
    CONTACT = "contact", "Contact"

    @property
    def type_id(self) -> int:
        return ENTITY_TYPE_IDS[self]


ENTITY_TYPE_IDS: dict[str, int] = {CrmEntity.LEAD: 1, CrmEntity.DEAL: 2, CrmEntity.CONTACT: 3}


class Bitrix24Settings(models.Model):
    """How one business connects to its portal and what syncs. Secrets are encrypted at rest,
    write-only in forms and never logged (logs name `portal_host` only)."""

    class Mode(models.TextChoices):
        WEBHOOK = "webhook", _("Incoming webhook")
        APP = "app", _("Local application (server-side, no UI)")

    class Entity(models.TextChoices):
        """What a new chat creates: the `CrmEntity` values a business may choose."""

        DEAL = CrmEntity.DEAL.value, _("Deal")
        LEAD = CrmEntity.LEAD.value, _("Lead")

    business = models.OneToOneField(Business, on_delete=models.CASCADE, related_name="bitrix24")
    is_active = models.BooleanField(default=True)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.WEBHOOK)

    webhook_url = EncryptedTextField(
        blank=True, help_text="https://{portal}/rest/{user}/{code}/ — a secret: stored encrypted."
    )
    portal_url = models.URLField(
        blank=True, help_text="https://{portal} (app mode; taken from the webhook URL otherwise)."
    )
    application_token = EncryptedTextField(
        blank=True, help_text="Checks outbound events (auth[application_token])."
    )
    client_id = models.CharField(max_length=128, blank=True, help_text="App mode: client_id.")
    client_secret = EncryptedTextField(blank=True)
    access_token = EncryptedTextField(blank=True)
    refresh_token = EncryptedTextField(blank=True)
    access_expires_at = models.DateTimeField(null=True, blank=True)
    oauth_server_url = models.URLField(default="https://oauth.bitrix.info")
    member_id = models.CharField(max_length=64, blank=True)
    installed_at = models.DateTimeField(null=True, blank=True)
    pending_install = EncryptedTextField(
        blank=True, help_text="Tokens of an install event, kept until a worker has proved them."
    )

    entity = models.CharField(max_length=8, choices=Entity.choices, default=Entity.DEAL)
    pipeline_id = models.PositiveIntegerField(default=0, help_text="Deal category (0 = default).")
    handoff_stage = models.CharField(
        max_length=64,
        blank=True,
        help_text="Stage for handed-off chats: a status id (PREPARATION, C3:PREPARATION) or name.",
    )
    rate_limit = models.FloatField(
        default=2.0,
        help_text="The portal's published drain rate (requests/s): 2, or 5 on Enterprise.",
    )
    burst = models.PositiveIntegerField(
        default=50, help_text="The portal's published burst: 50, or 250 on Enterprise."
    )
    technical_user_id = models.PositiveIntegerField(
        null=True, blank=True, help_text="Bitrix24 user the integration writes as (ignored echoes)."
    )
    default_responsible_id = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Responsible user for new leads/deals (default: technical).",
    )
    originator_id = models.CharField(
        max_length=64, default="wa-inbox", help_text="originatorId on entities we create."
    )
    auth_connector = models.CharField(
        max_length=64,
        blank=True,
        help_text="App mode: our writes do not come back as offline events.",
    )
    connector_id = models.CharField(max_length=64, blank=True, help_text="imconnector ID.")
    line_id = models.CharField(max_length=32, blank=True, help_text="Open Channel line ID.")
    field_map = models.JSONField(
        default=dict,
        blank=True,
        help_text='Handoff facts to user fields, e.g. {"city": "UF_CRM_CITY"}.',
    )

    sync_chats = models.BooleanField(default=True, help_text="New chats → contact + lead/deal.")
    sync_handoffs = models.BooleanField(default=True, help_text="Handoffs → stage + timeline.")
    sync_responsible = models.BooleanField(
        default=True, help_text="Assigned manager → responsible."
    )
    sync_back = models.BooleanField(
        default=True, help_text="Stage, responsible and contact name changes come back."
    )
    sync_open_channels = models.BooleanField(
        default=False, help_text="App mode: customer messages to Open Channels, replies back."
    )

    reconcile_checkpoint = models.DateTimeField(null=True, blank=True)
    contact_checkpoint = models.DateTimeField(null=True, blank=True)
    offline_process_id = models.CharField(max_length=64, blank=True)
    last_check = models.JSONField(default=dict, blank=True)
    last_check_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "Bitrix24 settings"
        verbose_name_plural = "Bitrix24 settings"

    def __str__(self) -> str:
        return f"Bitrix24 sync for {self.business.name} ({self.portal_host or 'not connected'})"

    @property
    def portal_host(self) -> str:
        """The portal's host name: the only part of the connection that may be logged."""
        source = self.webhook_url if self.mode == self.Mode.WEBHOOK else self.portal_url
        return urlsplit(source or self.portal_url or "").netloc

    @property
    def entity_type_id(self) -> int:
        return ENTITY_TYPE_IDS[self.entity]

    @property
    def is_configured(self) -> bool:
        if self.mode == self.Mode.WEBHOOK:
            return bool(self.webhook_url)
        return bool(self.portal_url and self.client_id and self.refresh_token)


class CrmLink(models.Model):
    """What Bitrix24 holds for one chat: the contact and lead/deal we created or found, the
    stage and responsible user as last read, and the outbound work still to do.

    One row per chat is also the unit of work: a worker claims the row (`claimed_until`), so
    two workers never sync the same chat at once."""

    class Semantics(models.TextChoices):
        IN_PROGRESS = "in_progress", "In progress"
        WON = "won", "Won"
        LOST = "lost", "Lost"

    chat = models.OneToOneField(Chat, on_delete=models.CASCADE, related_name="crm_link")
    business = models.ForeignKey(Business, on_delete=models.CASCADE, related_name="crm_links")
    entity_type = models.CharField(
        max_length=8, choices=Bitrix24Settings.Entity.choices, blank=True, help_text="deal or lead"
    )
    entity_id = models.PositiveBigIntegerField(null=True, blank=True, db_index=True)
    contact_id = models.PositiveBigIntegerField(null=True, blank=True, db_index=True)
    category_id = models.PositiveIntegerField(null=True, blank=True)
    stage_id = models.CharField(max_length=64, blank=True)
    stage_semantics = models.CharField(max_length=16, choices=Semantics.choices, blank=True)
    stage_name = models.CharField(max_length=200, blank=True)
    responsible_id = models.PositiveBigIntegerField(null=True, blank=True)
    responsible_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The inbox user mapped to the responsible Bitrix24 user, if any.",
    )
    contact_name = models.CharField(max_length=200, blank=True)
    crm_fields = models.JSONField(
        default=dict, blank=True, help_text="Mapped user fields as labels (city, …)."
    )
    # Echo-loop protection: the synced fields as we last wrote or read them, and their hash.
    remote_state = models.JSONField(default=dict, blank=True)
    synced_hash = models.CharField(max_length=64, blank=True)
    contact_hash = models.CharField(max_length=64, blank=True)
    link_comment_id = models.PositiveBigIntegerField(null=True, blank=True)
    phone_item_id = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="ID of the contact's phone entry we wrote (fm item)."
    )
    remote_deleted = models.BooleanField(default=False)
    remote_modified_at = models.DateTimeField(null=True, blank=True)

    # Outbound work
    needs_sync = models.BooleanField(default=True, db_index=True)
    # Bumped by every request for work; a pass only clears `needs_sync` if nothing came since.
    sync_seq = models.PositiveIntegerField(default=0)
    needs_responsible = models.BooleanField(default=False)
    verify = models.BooleanField(default=False, help_text="Re-check the CRM side (full sync).")
    in_doubt = models.BooleanField(
        default=False, help_text="A write may have happened without an answer: look first."
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["business", "needs_sync", "next_attempt_at"])]

    def __str__(self) -> str:
        target = f"{self.entity_type} {self.entity_id}" if self.entity_id else "not linked"
        return f"chat #{self.chat_id} → {target}"


class HandoffSync(models.Model):
    """Outbox row for one handoff: move the deal to the handoff stage and write the summary to
    its timeline, exactly once."""

    handoff = models.OneToOneField(Handoff, on_delete=models.CASCADE, related_name="crm_sync")
    link = models.ForeignKey(CrmLink, on_delete=models.CASCADE, related_name="handoffs")
    stage_done = models.BooleanField(default=False)
    comment_id = models.PositiveBigIntegerField(null=True, blank=True)
    done_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"handoff #{self.handoff_id} ({'done' if self.done_at else 'pending'})"


class FailedMessageSync(models.Model):
    """Outbox row for one message a manager or the bot sent that WhatsApp did not deliver: a
    comment on the deal's timeline with the reason, exactly once."""

    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="crm_failure")
    link = models.ForeignKey(CrmLink, on_delete=models.CASCADE, related_name="failures")
    comment_id = models.PositiveBigIntegerField(null=True, blank=True)
    done_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"failed message #{self.message_id} ({'done' if self.done_at else 'pending'})"


class PendingPull(models.Model):
    """An entity Bitrix24 said changed (event, offline queue, reconciliation): re-read it.
    One row per entity; a newer request while a worker holds the row keeps it for another pass."""

    class Source(models.TextChoices):
        """Who said the entity changed."""

        EVENT = "event", "Outbound event"
        OFFLINE = "offline", "Offline event queue"

    business = models.ForeignKey(Business, on_delete=models.CASCADE, related_name="+")
    entity_type = models.CharField(max_length=8, choices=CrmEntity.choices)
    entity_id = models.PositiveBigIntegerField()
    event = models.CharField(max_length=64, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, blank=True)
    requested_at = models.DateTimeField(auto_now=True)
    # Bumped by every request; a pass deletes the row only if nothing came since it claimed it.
    seq = models.PositiveIntegerField(default=1)
    claimed_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["business", "entity_type", "entity_id"], name="b24_pull_unique_entity"
            )
        ]

    def __str__(self) -> str:
        return f"pull {self.entity_type} {self.entity_id}"


class UserLink(models.Model):
    """An inbox manager's Bitrix24 user, for the responsible field both ways."""

    business = models.ForeignKey(Business, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    bitrix_user_id = models.PositiveBigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["business", "user"], name="b24_user_unique_user"),
            models.UniqueConstraint(
                fields=["business", "bitrix_user_id"], name="b24_user_unique_bitrix_user"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} = Bitrix24 user {self.bitrix_user_id}"


class ConnectorMessage(models.Model):
    """A message through the Open Channels connector: a customer message we send to Bitrix24
    (out), or an operator reply Bitrix24 sent us (in), with its delivery state."""

    class Direction(models.TextChoices):
        TO_BITRIX = "to_bitrix", "Customer message to Open Channels"
        FROM_BITRIX = "from_bitrix", "Operator reply from Open Channels"

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending to the customer"
        SENT = "sent", "Sent"
        ACKED = "acked", "Delivered and acknowledged"
        REJECTED = "rejected", "Not sent"

    business = models.ForeignKey(Business, on_delete=models.CASCADE, related_name="+")
    direction = models.CharField(max_length=16, choices=Direction.choices)
    chat = models.ForeignKey(
        Chat, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    im_chat_id = models.CharField(max_length=32, blank=True)
    im_message_id = models.CharField(max_length=32, blank=True)
    bitrix_user_id = models.PositiveBigIntegerField(null=True, blank=True)
    external_chat_id = models.CharField(max_length=64, blank=True)
    text = models.TextField(blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    provider_message_id = models.CharField(max_length=255, blank=True)
    reason = models.CharField(max_length=255, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["business", "im_chat_id", "im_message_id"],
                condition=Q(direction="from_bitrix"),
                name="b24_connector_unique_operator_message",
            ),
            models.UniqueConstraint(
                fields=["message"],
                condition=Q(direction="to_bitrix"),
                name="b24_connector_unique_customer_message",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.direction} {self.state} #{self.pk}"
