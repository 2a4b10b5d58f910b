"""A customer's voice note becomes text the assistant can answer, or a human's job.

    transcribe_message(message_id, last_attempt=…)

    already transcribed (or failed)       → skip: a redelivered task does nothing twice
    original not stored yet                → download it through the chat's transport and keep
                                             it on Message.media_file (managers play it back)
    transcribe (assistant.speech.transcribe) with the channel's language and the price list's names
    transcript stored                      → the chat's debounce timer starts now (not when the
                                             audio arrived), so a text sent meanwhile joins the
                                             same turn
    broken / too long / download refused /
    speech service down after retries      → an internal note saying why, with a link to the
                                             audio, and the chat is handed to a human

Transient failures (network, a busy speech server, a slow worker) raise `TryLater` so the task
retries with backoff; on the last attempt they end in the handoff too. Never a silent drop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction
from django.urls import reverse

from assistant import language
from assistant.decision import replies
from assistant.knowledge.effective import knowledge_for_channel
from assistant.speech import transcribe as speech
from assistant.speech.audio import AudioError
from inbox.conversations import attachments, debounce, hooks
from inbox.conversations.handoff import hand_off
from inbox.conversations.models import Chat, Message, Owner
from inbox.conversations.outbound import add_internal_note
from inbox.conversations.transports import MediaError

log = logging.getLogger(__name__)

HANDOFF_REASON = "voice_failed"
VOICE_KINDS = (Message.Kind.VOICE, Message.Kind.AUDIO)


class TryLater(Exception):
    """A transient failure: the task should run again later."""


@dataclass(frozen=True)
class Failure:
    code: str  # too_long | unreadable | download_failed | speech_failed
    explanation: str  # for the manager, in the internal note


def transcribe_message(message_id: int, *, last_attempt: bool = False) -> str:
    """Transcribe one voice note; returns what happened (for logs and tests)."""
    message = Message.objects.select_related("chat", "channel").filter(pk=message_id).first()
    if message is None or message.kind not in VOICE_KINDS:
        return "ignored"
    if message.transcript_status != Message.TranscriptStatus.PENDING:
        return "already_done"
    try:
        content = attachments.content(message)
        result = speech.transcribe(
            content,
            language=message.channel.language or None,
            prompt_words=prompt_words(message.channel_id),
        )
    except AudioError as exc:
        code = "too_long" if isinstance(exc, speech.AudioTooLong) else "unreadable"
        return fail(message, Failure(code, str(exc)))
    except MediaError as exc:
        if not exc.permanent and not last_attempt:
            raise TryLater(f"media download: {exc.title}") from exc
        return fail(message, Failure("download_failed", _download_explanation(exc)))
    except speech.SpeechBackendError as exc:
        if not exc.permanent and not last_attempt:
            raise TryLater(f"speech backend: {exc}") from exc
        return fail(message, Failure("speech_failed", f"The speech service failed: {exc}"))
    return store_transcript(message, result)


def store_transcript(message: Message, result: speech.Transcript) -> str:
    """Write the transcript once (compare-and-set on the pending status), then start the
    chat's debounce timer if the bot owns it."""
    with transaction.atomic():
        stored = Message.objects.filter(
            pk=message.pk, transcript_status=Message.TranscriptStatus.PENDING
        ).update(
            transcript=result.text,
            transcript_status=Message.TranscriptStatus.DONE,
            transcript_confidence=round(result.confidence, 4),
            transcript_language=result.language[:8],
            transcript_segments=result.segments_json(),
        )
        if stored != 1:
            return "already_done"
        hooks.message_changed(message.pk)
        owner = Chat.objects.filter(pk=message.chat_id).values_list("owner", flat=True).first()
        if owner == Owner.BOT:
            debounce.schedule_on_commit(message.chat_id)
    log.info(
        "voice.transcribed",
        extra={
            "message_id": message.pk,
            "chat_id": message.chat_id,
            "confidence": round(result.confidence, 3),
            "audio_seconds": round(result.duration_s, 1),
        },
    )
    return "transcribed"


def fail(message: Message, failure: Failure) -> str:
    """Mark the transcript failed (once), leave managers a note linking the audio, and hand the
    chat to a human unless one already has it."""
    url = media_url(message.pk) if message.media_file else ""
    with transaction.atomic():
        payload = {**message.payload, "transcript_error": failure.code}
        marked = Message.objects.filter(
            pk=message.pk, transcript_status=Message.TranscriptStatus.PENDING
        ).update(transcript_status=Message.TranscriptStatus.FAILED, payload=payload)
        if marked != 1:
            return "already_done"
        listen = f" Listen to the recording: {url}" if url else ""
        note = add_internal_note(
            message.chat_id, f"Voice message not transcribed: {failure.explanation}{listen}"
        )
        Message.objects.filter(pk=note.pk).update(
            payload={"voice_message_id": message.pk, "media_url": url, "reason": failure.code}
        )
        hooks.message_changed(message.pk)
    log.warning(
        "voice.failed",
        extra={"message_id": message.pk, "chat_id": message.chat_id, "reason": failure.code},
    )
    _hand_to_human(message, failure, url)
    return "failed"


def _hand_to_human(message: Message, failure: Failure, url: str) -> None:
    """Hand off while the bot owns the chat; a newer message (version moved on) is retried
    with the new version, a human owner needs nothing more than the note."""
    for _ in range(3):
        chat = Chat.objects.select_related("channel").get(pk=message.chat_id)
        if chat.owner != Owner.BOT:
            return
        outcome = hand_off(
            chat.pk,
            reason=HANDOFF_REASON,
            summary=f"A voice message could not be transcribed ({failure.code}): "
            f"{failure.explanation}",
            facts={},
            message_to_customer=replies.handoff_message(HANDOFF_REASON, _language(chat)),
            generated_at_version=chat.version,
            answered_up_to=_latest_inbound(chat),
            details={"voice_message_id": message.pk, "media_url": url, "error": failure.code},
        )
        if outcome.handed_off or outcome.reason != "stale":
            return
    log.error("voice.handoff_lost_race", extra={"chat_id": message.chat_id})


def _latest_inbound(chat: Chat) -> int:
    """Everything the customer sent up to now is the human's to answer after this handoff."""
    latest = (
        chat.messages.filter(direction=Message.Direction.INBOUND)
        .order_by("-pk")
        .values_list("pk", flat=True)
        .first()
    )
    return int(latest or 0)


def prompt_words(channel_id: int) -> list[str]:
    """Names from the channel's effective price list, in its order: the words a customer is
    most likely to say that a general speech model spells wrong."""
    return [item.name for item in knowledge_for_channel(channel_id).items]


def media_url(message_id: int) -> str:
    return reverse("message_media", args=[message_id])


def _language(chat: Chat) -> str:
    """The customer's language for the handoff notice: from what they wrote, else the
    channel's."""
    recent = (
        chat.messages.filter(direction=Message.Direction.INBOUND, kind=Message.Kind.TEXT)
        .exclude(text="")
        .order_by("-pk")[:5]
    )
    channel = chat.channel
    return language.customer_language(
        (m.text for m in recent), channel.language or channel.business.language
    )


def _download_explanation(error: MediaError) -> str:
    return (
        f"The audio could not be downloaded from WhatsApp ({error.title}). "
        "Ask the customer to send it again or to write the message."
    )
