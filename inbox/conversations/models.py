"""The conversation core: businesses, their channels, chats, messages and who owns each chat.

`Chat.owner` is written only by `inbox/conversations/ownership.py`, `Chat.status` only by
`inbox/conversations/status.py`, and each change of either leaves a `ChatTransition` row
(`inbox/conversations/audit.py`). Everything else reads them.

The app's other rows live in modules beside this one and are imported at its top or end,
so Django registers them with the app labelled "inbox" and the rest of the code imports every
model and closed set from here: `chat_state_models.py` (who holds a chat, its status, their
audit rows, read markers), `supervision_models.py` (drafts, flags), `operation_models.py`
(alerts, API tokens, jobs), `reply_tool_models.py` (labels, canned replies),
`template_models.py` and `followup_models.py`. Their foreign keys name models by string, so
none of them imports this module.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from inbox.conversations.chat_state_models import (
    TRANSITION_CAUSES as TRANSITION_CAUSES,
)
from inbox.conversations.chat_state_models import ChatStatus as ChatStatus
from inbox.conversations.chat_state_models import ChatTransition as ChatTransition
from inbox.conversations.chat_state_models import Owner as Owner
from inbox.conversations.chat_state_models import OwnershipCause as OwnershipCause
from inbox.conversations.chat_state_models import ReadMarker as ReadMarker
from inbox.conversations.chat_state_models import StatusCause as StatusCause
from inbox.platform.fields import EncryptedTextField


def default_business_language() -> str:
    """The installation's language (settings.LANGUAGE_CODE), as a two-letter code."""
    return str(settings.LANGUAGE_CODE).split("-")[0][:8]


class Business(models.Model):
    name = models.CharField(max_length=200, unique=True)
    timezone = models.CharField(
        max_length=64,
        default="UTC",
        help_text="IANA name (e.g. Europe/Moscow): working hours, reports, the silent-number "
        "alert and every time a manager sees are in this time zone.",
    )
    language = models.CharField(
        max_length=8,
        default=default_business_language,
        blank=True,
        help_text="The assistant's language where a channel names none (e.g. en, ru).",
    )
    # The inbox's language for this business's members who chose none (Membership.ui_language)
    # and for the fragments pushed over the websocket (inbox/web/local_language.py). Apart
    # from `language`: a Russian-speaking team may run an assistant that answers in Kazakh.
    ui_language = models.CharField(
        "inbox language",
        max_length=8,
        choices=settings.LANGUAGES,
        default="en",
        help_text="The language of the inbox for members who have not chosen their own.",
    )
    retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Purge message text, media and transcripts older than this many days; "
        "empty = the installation's RETENTION_DAYS, 0 = keep forever.",
    )
    auto_assign = models.BooleanField(
        default=False,
        help_text="Give each chat that starts waiting for a human to the next online manager "
        "(round robin, each under their chat cap). See inbox/conversations/auto_assign.py.",
    )
    # The user id the last auto-assigned chat went to: the round robin's cursor.
    auto_assign_cursor = models.PositiveIntegerField(default=0, editable=False)
    mask_phone_for_managers = models.BooleanField(
        default=False,
        help_text="Show customers' phone numbers to managers with the middle digits hidden "
        "(business admins still see them whole).",
    )
    opt_out_keywords = models.TextField(
        blank=True,
        help_text='Messages that mean "stop writing to me", one per line (any case); '
        "empty = the built-in English, Russian and Kazakh list.",
    )

    class ResolveReturnsTo(models.TextChoices):
        BOT = "bot", _("The bot answers the customer's next message")
        UNASSIGNED = "unassigned", _("The chat waits for a human, nobody assigned")

    resolve_returns_to = models.CharField(
        "a resolved chat goes back to",
        max_length=16,
        choices=ResolveReturnsTo.choices,
        default=ResolveReturnsTo.BOT,
        help_text="When a manager resolves a chat, their hold on it ends: who has it when the "
        "customer writes again.",
    )
    # The follow-up ladder after an unanswered quote (inbox/upkeep/followups.py): off when empty.
    followup_steps = models.CharField(
        "follow-up after (hours)",
        max_length=64,
        blank=True,
        help_text="Hours after the bot's quote with no reply from the customer, e.g. '2, 24'; "
        "empty = no follow-ups.",
    )
    followup_texts = models.TextField(
        "follow-up texts",
        blank=True,
        help_text="One line per step, in the business's language; empty = a short built-in "
        "nudge in the customer's language.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "businesses"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


# Why a channel's number is refused when another channel has it: the same words whichever
# business that is, so the form tells no admin which numbers other tenants use.
NUMBER_REFUSED = _("This number can't be added. Contact support if it is yours.")


class Approval(models.TextChoices):
    """Which of a channel's bot replies a person approves first (`inbox.conversations.drafts`)."""

    OFF = "off", _("Off: the bot replies by itself")
    AMOUNTS = "amounts", _("Replies that state an amount, a date or a promise")
    ALL = "all", _("Every bot reply")


class Channel(models.Model):
    """One WhatsApp number (or the sandbox) of a business, with its own timing rules."""

    class Kind(models.TextChoices):
        CLOUD_API = "cloud_api", _("WhatsApp Cloud API")
        BRIDGE = "bridge", _("Linked-device bridge")
        EVOLUTION = "evolution", _("Evolution API (linked device)")
        WAHA = "waha", _("WAHA (linked device)")
        SANDBOX = "sandbox", _("Sandbox (test chat in the browser)")

    business = models.ForeignKey(Business, on_delete=models.CASCADE, related_name="channels")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    is_active = models.BooleanField(default=True)

    # Cloud API
    phone_number_id = models.CharField(
        max_length=64, blank=True, help_text="Cloud API phone number ID (from Meta)."
    )
    display_phone_number = models.CharField(max_length=32, blank=True)
    access_token = EncryptedTextField(blank=True, help_text="Cloud API access token.")
    waba_id = models.CharField(
        "WABA ID",
        max_length=64,
        blank=True,
        help_text="WhatsApp Business Account ID (from Meta): its message templates are synced.",
    )
    # The approved UTILITY template sent when a manager answers after the 24-hour window closed
    # ("we have an answer, reply to see it"); blank = none (inbox/conversations/pending_replies.py).
    reengage_template_name = models.CharField(max_length=512, blank=True)
    reengage_template_language = models.CharField(max_length=16, blank=True)
    # Linked-device bridge
    bridge_url = models.URLField(blank=True, help_text="Base URL of the bridge's HTTP API.")
    bridge_token = EncryptedTextField(
        blank=True, help_text="Bearer token, both for events the bridge posts and for sends."
    )
    # Evolution API and WAHA: the gateway's base URL and key are bridge_url and bridge_token;
    # this names the number inside the gateway (an Evolution instance, a WAHA session).
    gateway_instance = models.CharField(
        max_length=100, blank=True, help_text="Evolution API instance or WAHA session name."
    )

    language = models.CharField(
        max_length=8,
        blank=True,
        help_text="Language of most customers (e.g. en, ru); blank = detect.",
    )
    debounce_seconds = models.FloatField(
        default=4.0, help_text="Wait this long after a customer's last message before answering."
    )
    idle_release_hours = models.FloatField(
        default=4.0,
        help_text="Give a chat back to the bot after this long without a manager message.",
    )
    late_answer_cutoff_minutes = models.FloatField(
        default=30.0, help_text="Older customer messages go to a human instead of the bot."
    )
    voice_confidence_threshold = models.FloatField(
        default=0.6, help_text="Below this transcript confidence the assistant asks to clarify."
    )
    working_hours = models.JSONField(
        default=dict,
        blank=True,
        help_text='e.g. {"mon": ["09:00", "18:00"], …}; empty = always on.',
    )
    silent_alert_minutes = models.PositiveIntegerField(
        default=120, help_text="Alert when no event arrives for this long during working hours."
    )
    last_event_at = models.DateTimeField(null=True, blank=True)
    read_receipts = models.BooleanField(
        default=True,
        help_text="Mark the customer's messages read when the assistant starts answering "
        "(Cloud API and WAHA numbers).",
    )
    typing_indicator = models.BooleanField(
        default=True,
        help_text='Show "typing…" while the assistant composes a reply; WhatsApp shows it '
        "only together with the read mark, so it needs read receipts on.",
    )
    # Supervised replies (inbox/conversations/drafts.py): which bot replies wait for a person.
    approval = models.CharField(
        max_length=8,
        choices=Approval.choices,
        default=Approval.OFF,
        help_text="Bot replies that wait for a manager's approval before they go out.",
    )
    approval_timeout_minutes = models.PositiveIntegerField(
        default=10,
        help_text="A draft not approved within this many minutes (of working hours, when set) "
        "hands the chat to a person and tells the customer so.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["business__name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["phone_number_id"],
                condition=~Q(phone_number_id=""),
                name="channel_unique_phone_number_id",
                violation_error_message=NUMBER_REFUSED,
            )
        ]

    def __str__(self) -> str:
        return f"{self.business.name} / {self.name}"


class Membership(models.Model):
    """A user's access to one business. Managers see only the channels they are assigned to,
    or all channels of the business when none are assigned."""

    class Role(models.TextChoices):
        ADMIN = "admin", _("Business admin")
        MANAGER = "manager", _("Manager")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    business = models.ForeignKey(Business, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MANAGER)
    channels = models.ManyToManyField(
        Channel,
        blank=True,
        related_name="assigned_memberships",
        help_text="Leave empty to give access to every channel of the business.",
    )
    chat_cap = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Auto-assignment gives this member no more open chats than this; "
        "empty = no cap, 0 = none.",
    )
    # Desktop notifications this user wants from this business (inbox/web/live/notify.py); off
    # until the manager turns them on, since the browser must be asked for permission too.
    notify_waiting = models.BooleanField("new waiting chat", default=False)
    notify_assigned = models.BooleanField("assigned to me", default=False)
    notify_my_messages = models.BooleanField("message in my chat", default=False)
    # The name this business's team and its customers see (inbox, canned-reply signatures,
    # audit); blank = the user's first/last name, else the username. Per membership, so the
    # admin of one business renames no one in another (inbox/conversations/team.py).
    display_name = models.CharField(max_length=80, blank=True)
    # The inbox's language this member chose ("My profile"); blank = the business's
    # `ui_language` (inbox/web/local_language.py).
    ui_language = models.CharField(max_length=8, choices=settings.LANGUAGES, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "business"], name="membership_unique_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.business} ({self.role})"


class Chat(models.Model):
    """One customer on one channel."""

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="chats")
    # 160: a BSUID is a country code, a dot and up to 128 letters and digits.
    customer_key = models.CharField(
        max_length=160, help_text="wa_id, or the business-scoped user id when wa_id is empty."
    )
    customer_phone = models.CharField(max_length=32, blank=True)
    customer_name = models.CharField(max_length=200, blank=True)
    # Cloud API: the customer's business-scoped user id (`contacts[].user_id`), stored whenever
    # an event carries it, and their WhatsApp username. A customer who hides their number is
    # keyed on the BSUID; when their number shows up, the chat is re-keyed or merged, never
    # split (`inbox.conversations.identity`).
    customer_bsuid = models.CharField(max_length=160, blank=True)
    customer_username = models.CharField(max_length=64, blank=True)

    owner = models.CharField(max_length=16, choices=Owner.choices, default=Owner.BOT)
    # Bumped by every customer message and every owner change: a reply generated at an older
    # version is stale and is never sent.
    version = models.PositiveBigIntegerField(default=0)
    assigned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_chats",
    )
    # Customer messages with an id at or below this were answered (by the bot or a human).
    answered_up_to = models.PositiveBigIntegerField(default=0)
    # Customer messages stored so far; a manager's unread count is this minus their
    # `ReadMarker.read_count` (inbox/conversations/reading.py).
    customer_messages = models.PositiveIntegerField(default=0)
    # Written only by inbox/conversations/status.py.
    status = models.CharField(max_length=16, choices=ChatStatus.choices, default=ChatStatus.OPEN)
    snoozed_until = models.DateTimeField(null=True, blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    last_customer_at = models.DateTimeField(null=True, blank=True)
    # Cloud API only: when the customer-service window closes (`inbox.conversations.window`).
    window_closes_at = models.DateTimeField(null=True, blank=True)
    last_manager_at = models.DateTimeField(null=True, blank=True)
    last_message_at = models.DateTimeField(null=True, blank=True, db_index=True)
    owner_changed_at = models.DateTimeField(null=True, blank=True)
    # When WhatsApp said this customer cannot receive messages (131026), by its clock. Holds
    # only until the customer writes again (`last_customer_at` later than it): see
    # `delivery_status.undeliverable`. Written only by inbox/conversations/delivery_status.py.
    undeliverable_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["channel", "customer_key"], name="chat_unique_customer")
        ]
        indexes = [
            models.Index(fields=["owner", "owner_changed_at"]),
            models.Index(fields=["status", "snoozed_until"]),
            # The reports join handoffs, transitions and turns to their chat only to keep a
            # business's channels: an index-only probe instead of a scan of every chat.
            models.Index(fields=["channel", "id"], name="chat_report_channel"),
            models.Index(fields=["channel", "customer_bsuid"], name="chat_bsuid"),
        ]

    def __str__(self) -> str:
        return f"{self.customer_name or self.customer_key} on {self.channel.name}"

    @property
    def business_id(self) -> int:
        return self.channel.business_id


class Message(models.Model):
    class Direction(models.TextChoices):
        INBOUND = "in", "From the customer"
        OUTBOUND = "out", "To the customer"
        INTERNAL = "internal", "Internal note"

    class Author(models.TextChoices):
        CUSTOMER = "customer", _("Customer")
        BOT = "bot", _("Assistant")
        MANAGER = "manager", _("Manager (inbox)")
        PHONE = "phone", _("Manager (from the phone)")
        SYSTEM = "system", _("System")

    class Kind(models.TextChoices):
        TEXT = "text", "Text"
        VOICE = "voice", "Voice note"
        AUDIO = "audio", "Audio file"
        IMAGE = "image", "Image"
        DOCUMENT = "document", "Document"
        VIDEO = "video", "Video"
        STICKER = "sticker", "Sticker"
        LOCATION = "location", "Location"
        CONTACTS = "contacts", "Contacts"
        INTERACTIVE = "interactive", "Button or list reply"
        REACTION = "reaction", "Reaction"
        UNSUPPORTED = "unsupported", "Unsupported"
        NOTE = "note", "Internal note"
        TEMPLATE = "template", "Message template"

    class Status(models.TextChoices):
        RECEIVED = "received", _("Received")
        PENDING = "pending", _("Queued")
        SENDING = "sending", _("Sending")
        SENT = "sent", _("Sent")
        DELIVERED = "delivered", _("Delivered")
        READ = "read", _("Read")
        PLAYED = "played", _("Played")
        FAILED = "failed", _("Failed")
        UNKNOWN = "unknown", _("Outcome unknown")

    class TranscriptStatus(models.TextChoices):
        NONE = "", "No transcript"
        PENDING = "pending", "Transcribing"
        DONE = "done", "Transcribed"
        FAILED = "failed", "Transcription failed"

    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="messages")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="messages")
    direction = models.CharField(max_length=8, choices=Direction.choices)
    author = models.CharField(max_length=16, choices=Author.choices)
    sent_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="sent_messages",
    )
    from_me = models.BooleanField(default=False, help_text="Sent from the business number.")
    sent_by_bot = models.BooleanField(default=False)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.TEXT)
    text = models.TextField(blank=True)

    media_ref = models.CharField(max_length=1024, blank=True, help_text="Provider media id or URL.")
    media_mime = models.CharField(max_length=128, blank=True)
    media_sha256 = models.CharField(max_length=128, blank=True)
    media_filename = models.CharField(max_length=255, blank=True)
    media_file = models.FileField(upload_to="media/%Y/%m/", blank=True)

    transcript = models.TextField(blank=True)
    transcript_status = models.CharField(
        max_length=8, choices=TranscriptStatus.choices, default=TranscriptStatus.NONE, blank=True
    )
    transcript_confidence = models.FloatField(null=True, blank=True)
    transcript_language = models.CharField(max_length=8, blank=True)
    transcript_segments = models.JSONField(default=list, blank=True)

    provider_message_id = models.CharField(max_length=255, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED)
    status_at = models.DateTimeField(null=True, blank=True)
    error_code = models.CharField(max_length=32, blank=True)
    error_title = models.CharField(max_length=500, blank=True)
    # Kind-specific details: location, reaction target, quoted message, edit/revoke target...
    payload = models.JSONField(default=dict, blank=True)
    provider_timestamp = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Set when the retention period removed the content (text, media, transcript); the row stays
    # so the conversation's shape and its audit trail remain (inbox/upkeep/retention.py).
    purged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            # The durable second line of dedup (the first is a Redis SET NX).
            models.UniqueConstraint(
                fields=["channel", "provider_message_id"],
                condition=~Q(provider_message_id=""),
                name="message_unique_provider_id",
            )
        ]
        indexes = [
            models.Index(fields=["chat", "id"]),
            # The reports (inbox/web/reports/): index-only range scans of the customers'
            # messages and of the managers' (partial, so each holds only what it is read for),
            # and a manager's first reply after a handoff found by (chat, time).
            models.Index(
                fields=[
                    "channel",
                    "created_at",
                    "chat",
                    "kind",
                    "transcript_status",
                    "transcript_confidence",
                ],
                condition=Q(direction="in"),
                name="message_report_inbound",
            ),
            models.Index(
                fields=["channel", "created_at", "chat", "sent_by"],
                condition=Q(author__in=["manager", "phone"]),
                name="message_report_replies",
            ),
            models.Index(
                fields=["chat", "created_at", "sent_by"],
                condition=Q(author__in=["manager", "phone"]),
                name="message_report_first_reply",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_author_display()} {self.kind} #{self.pk}"

    @property
    def content(self) -> str:
        """What the message said, as text: the transcript stands in for a voice note."""
        if self.kind in (self.Kind.VOICE, self.Kind.AUDIO) and self.transcript:
            return self.transcript
        return self.text


class HandoffReason(models.TextChoices):
    """Why a chat went to a person: the reasons the product itself knows, with the label a manager
    reads. A business may add reasons of its own (AssistantSettings.handoff_reasons), so
    `Handoff.reason` stays a free code and `label_for` falls back to the code's words."""

    ASKS_FOR_HUMAN = "asks_for_human", _("Customer asked for a person")
    READY_TO_BUY = "ready_to_buy", _("Ready to buy")
    NON_STANDARD_TERMS = "non_standard_terms", _("Asks for special terms")
    COMPLAINT = "complaint", _("Complaint")
    OUTSIDE_KNOWLEDGE_BASE = "outside_knowledge_base", _("Outside the price list")
    AMBIGUOUS = "ambiguous", _("Several items match")
    LATE = "late", _("Answer would be late")
    GUARDRAIL = "guardrail", _("Reply blocked by a guardrail")
    MODEL_ERROR = "model_error", _("Assistant's answer was invalid")
    MODEL_UNAVAILABLE = "model_unavailable", _("Assistant unavailable")
    MODEL_MISCONFIGURED = "model_misconfigured", _("Model server refuses the configuration")
    VOICE_UNCLEAR = "voice_unclear", _("Voice note unclear")
    TRANSCRIPTION_FAILED = "transcription_failed", _("Voice note could not be transcribed")
    SEND_FAILED = "send_failed", _("Bot reply could not be sent")
    SEND_UNKNOWN = "send_unknown", _("Bot reply may not have been sent")
    TURN_FAILED = "turn_failed", _("Assistant failed on this chat")
    WINDOW_CLOSED = "window_closed", _("WhatsApp window closed: template only")
    REJECTED_DRAFT = "rejected_draft", _("A manager rejected the bot's draft")
    APPROVAL_TIMEOUT = "approval_timeout", _("Bot's draft not approved in time")

    @classmethod
    def label_for(cls, code: str) -> str:
        """The manager's words for a reason code, a business's own included."""
        if code in cls.values:
            return str(cls(code).label)
        return code.replace("_", " ").capitalize()


class Handoff(models.Model):
    """The assistant's hand-over of a chat to a human: why, a summary, and what was collected.
    The summary is generated once and kept, so every manager reads the same one."""

    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="handoffs")
    reason = models.CharField(max_length=64, db_index=True)
    summary = models.TextField(blank=True)
    facts = models.JSONField(default=dict, blank=True)
    message_to_customer = models.TextField(blank=True)
    details = models.JSONField(
        default=dict, blank=True, help_text="e.g. the reply a guardrail blocked, and why."
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["chat", "created_at"], name="handoff_report_chat")]

    def __str__(self) -> str:
        return f"handoff {self.reason} chat #{self.chat_id}"

    def facts_items(self) -> list[dict[str, Any]]:
        items = self.facts.get("items") if isinstance(self.facts, dict) else None
        return list(items) if isinstance(items, list) else []


class Turn(models.Model):
    """One run of the assistant over a chat's pending customer messages: what it saw, what it
    decided and what became of the reply. The record behind the sandbox review and metrics."""

    class Outcome(models.TextChoices):
        RUNNING = "running", _("Preparing a reply")
        ANSWERED = "answered", _("Answered")
        CLARIFIED = "clarified", _("Asked to clarify")
        HANDED_OFF = "handed_off", _("Handed to a human")
        DROPPED_STALE = "dropped_stale", _("Dropped: newer customer message")
        DROPPED_OWNER = "dropped_owner", _("Dropped: a human owns the chat")
        ALREADY_ANSWERED = "already_answered", _("Already answered")
        SEND_FAILED = "send_failed", _("Reply could not be sent")
        AWAITING_APPROVAL = "awaiting_approval", _("Reply waits for a person's approval")
        FAILED = "failed", _("Failed")

    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="turns")
    first_message_id = models.PositiveBigIntegerField()
    last_message_id = models.PositiveBigIntegerField()
    generated_at_version = models.PositiveBigIntegerField()
    outcome = models.CharField(max_length=24, choices=Outcome.choices, default=Outcome.RUNNING)
    backend = models.CharField(max_length=64, blank=True)
    action = models.CharField(max_length=16, blank=True)
    reason = models.CharField(max_length=64, blank=True)
    decision = models.JSONField(default=dict, blank=True)
    guardrail_findings = models.JSONField(default=list, blank=True)
    model_error = models.CharField(max_length=500, blank=True)
    reply_message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["reason", "started_at"], name="turn_report_reason"),
            # The follow-up ladder's search: answered turns finished in a step's range.
            models.Index(fields=["outcome", "finished_at"], name="turn_followup_due"),
        ]

    def __str__(self) -> str:
        return f"turn #{self.pk} chat #{self.chat_id} {self.outcome}"


class OptOut(models.Model):
    """A customer of a business asked not to be written to (a keyword, the platform's signal or
    a manager). Active while `cleared_at` is empty; a manager's clearing is kept with who did it.
    Written only by `inbox/conversations/opt_outs.py`."""

    class Source(models.TextChoices):
        KEYWORD = "keyword", "Customer's message"
        PLATFORM = "platform", "WhatsApp (stopped marketing messages)"
        MANAGER = "manager", "Manager"

    business = models.ForeignKey(Business, on_delete=models.CASCADE, related_name="opt_outs")
    customer_key = models.CharField(max_length=160)  # as `Chat.customer_key`
    source = models.CharField(max_length=16, choices=Source.choices)
    detail = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    cleared_at = models.DateTimeField(null=True, blank=True)
    cleared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-id"]
        constraints = [
            # At most one active row per customer: a second signal finds the first.
            models.UniqueConstraint(
                fields=["business", "customer_key"],
                condition=Q(cleared_at__isnull=True),
                name="opt_out_one_active",
            )
        ]

    def __str__(self) -> str:
        return f"opt-out #{self.pk} business #{self.business_id} ({self.source})"


# The rows of the template store, the pending replies, the follow-ups, the trust loop, the
# installation's operations and the managers' reply tools live in their own modules (string
# foreign keys, no import back here); imported here so Django registers them with the app.
from inbox.conversations.followup_models import (  # noqa: E402
    Followup as Followup,
)
from inbox.conversations.operation_models import (  # noqa: E402
    Alert as Alert,
)
from inbox.conversations.operation_models import (  # noqa: E402
    ApiToken as ApiToken,
)
from inbox.conversations.operation_models import (  # noqa: E402
    Job as Job,
)
from inbox.conversations.reply_tool_models import (  # noqa: E402
    CannedReply as CannedReply,
)
from inbox.conversations.reply_tool_models import (  # noqa: E402
    Label as Label,
)
from inbox.conversations.supervision_models import (  # noqa: E402
    Draft as Draft,
)
from inbox.conversations.supervision_models import (  # noqa: E402
    MessageFlag as MessageFlag,
)
from inbox.conversations.template_models import (  # noqa: E402
    MessageTemplate as MessageTemplate,
)
from inbox.conversations.template_models import (  # noqa: E402
    PendingReply as PendingReply,
)
