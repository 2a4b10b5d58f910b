"""What a turn works on: the chat's unanswered customer messages and the history before them.

A message is pending while its id is above `Chat.answered_up_to`. The version is read before
the messages, so a message that arrives while the turn is collecting makes the turn's reply stale
(dropped by `send_reply`) rather than silently unanswered.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Exists, OuterRef
from django.utils import timezone

from inbox.conversations.ingest import TURN_KINDS, VOICE_KINDS
from inbox.conversations.models import Chat, Draft, Message, Owner, Turn

HISTORY_MESSAGES = 30


@dataclass(frozen=True)
class PendingTurn:
    chat: Chat
    version: int
    messages: list[Message]
    history: list[Message]
    # A voice note of this turn is still being transcribed: its completion schedules the turn.
    waiting_for_transcript: bool

    @property
    def answered_up_to(self) -> int:
        return self.messages[-1].pk


def collect(chat_id: int) -> PendingTurn | None:
    """The turn to run for this chat now, or None when there is nothing for the bot to do."""
    chat = Chat.objects.select_related("channel", "channel__business").filter(pk=chat_id).first()
    if chat is None or chat.owner != Owner.BOT:
        return None
    version = chat.version
    if Draft.objects.filter(
        chat=chat, state=Draft.State.PENDING, generated_at_version=version
    ).exists():
        return None  # its reply waits for a person (inbox.conversations.drafts)
    messages = list(
        chat.messages.filter(
            direction=Message.Direction.INBOUND,
            pk__gt=chat.answered_up_to,
            kind__in=TURN_KINDS,
        ).order_by("pk")
    )
    if not messages:
        return None
    waiting = any(
        m.kind in VOICE_KINDS and m.transcript_status == Message.TranscriptStatus.PENDING
        for m in messages
    )
    return PendingTurn(chat, version, messages, history_before(chat, messages[0].pk), waiting)


def history_before(chat: Chat, first_message_id: int) -> list[Message]:
    """What the assistant sees of the chat before a turn's first message, oldest first."""
    history = list(
        chat.messages.filter(pk__lt=first_message_id)
        .exclude(direction=Message.Direction.INTERNAL)
        .exclude(status=Message.Status.FAILED)
        .order_by("-pk")[:HISTORY_MESSAGES]
    )
    history.reverse()
    return history


def as_recorded(turn: Turn) -> PendingTurn | None:
    """The pending turn a recorded Turn ran over: its customer messages and the history before
    them, as they were (a replay answers them again). None when the messages are gone."""
    chat = turn.chat
    messages = list(
        chat.messages.filter(
            direction=Message.Direction.INBOUND,
            pk__gte=turn.first_message_id,
            pk__lte=turn.last_message_id,
            kind__in=TURN_KINDS,
        ).order_by("pk")
    )
    if not messages:
        return None
    history = history_before(chat, messages[0].pk)
    return PendingTurn(chat, turn.generated_at_version, messages, history, False)


def stuck_chat_ids(older_than_seconds: float, limit: int = 500) -> list[int]:
    """Bot chats with customer messages no turn has answered for this long (a reply waiting
    for approval is not stuck)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    unanswered = Message.objects.filter(
        chat=OuterRef("pk"),
        direction=Message.Direction.INBOUND,
        kind__in=TURN_KINDS,
        pk__gt=OuterRef("answered_up_to"),
    ).exclude(transcript_status=Message.TranscriptStatus.PENDING)
    awaiting_approval = Draft.objects.filter(
        chat=OuterRef("pk"), state=Draft.State.PENDING, generated_at_version=OuterRef("version")
    )
    stuck = (
        Chat.objects.filter(owner=Owner.BOT, last_customer_at__lt=cutoff)
        .filter(Exists(unanswered))
        .exclude(Exists(awaiting_approval))
    )
    return list(stuck.values_list("pk", flat=True)[:limit])
