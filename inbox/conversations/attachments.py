"""Attachments of inbound messages, downloaded once and kept.

Provider download links expire (Cloud API: minutes; media ids: 7 days), so an image, document
or voice note is fetched through the chat's transport soon after it arrives and stored with
Django's default storage (MEDIA_ROOT, or any storage backend configured in STORAGES). Managers
then open it through the permission-checked `/inbox/media/<id>/`.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes

from celery import shared_task
from django.core.files.base import ContentFile
from django.db import transaction

from inbox.conversations import hooks
from inbox.conversations.models import Message
from inbox.conversations.transport_registry import transport_for
from inbox.conversations.transports import MediaBlob, MediaError

log = logging.getLogger(__name__)

FETCH_TASK = "inbox.fetch_attachment"
# Non-voice kinds whose files are kept (voice notes are fetched by their transcription).
KEPT_KINDS = frozenset({"image", "document", "video", "sticker"})
# Types `mimetypes` does not know or maps to an odd extension.
EXTENSIONS = {"audio/ogg": ".ogg", "audio/amr": ".amr", "image/webp": ".webp", "audio/mpeg": ".mp3"}


def content(message: Message) -> bytes:
    """The attachment's bytes, downloaded and kept on the message the first time. Raises
    MediaError when it cannot be downloaded."""
    if not message.media_file:
        keep(message, transport_for(message.channel).fetch_media(message))
    with message.media_file.open("rb") as handle:
        return bytes(handle.read())


def keep(message: Message, blob: MediaBlob) -> None:
    """Store a downloaded attachment on its message once; a second worker's copy is dropped."""
    mime = (blob.mime_type or message.media_mime or "application/octet-stream")[:128]
    base = mime.split(";")[0].strip().lower()
    extension = EXTENSIONS.get(base) or mimetypes.guess_extension(base) or ".bin"
    field = message.media_file
    field.save(f"{message.kind}-{message.pk}{extension}", ContentFile(blob.content), save=False)
    kept = Message.objects.filter(pk=message.pk, media_file="").update(
        media_file=field.name,
        media_mime=mime,
        media_sha256=message.media_sha256 or hashlib.sha256(blob.content).hexdigest(),
    )
    if kept != 1:
        field.storage.delete(str(field.name))
        message.refresh_from_db(fields=["media_file", "media_mime", "media_sha256"])
    else:
        message.media_mime = mime
        hooks.message_changed(message.pk)


def fetch_on_commit(message_id: int) -> None:
    transaction.on_commit(lambda: fetch_attachment.delay(message_id), robust=True)


@shared_task(
    name=FETCH_TASK,
    bind=True,
    acks_late=True,
    max_retries=5,
    soft_time_limit=120,
    time_limit=150,
    ignore_result=True,
)
def fetch_attachment(self, message_id: int) -> None:  # type: ignore[no-untyped-def]
    """Download and keep one attachment. Transient failures retry with backoff; a permanent
    one is recorded on the message for managers to see."""
    message = Message.objects.select_related("channel").filter(pk=message_id).first()
    if message is None or message.media_file or not message.media_ref:
        return
    try:
        content(message)
    except MediaError as exc:
        if not exc.permanent and self.request.retries < self.max_retries:
            raise self.retry(exc=exc, countdown=5 * 2**self.request.retries) from exc
        log.warning("attachment.failed", extra={"message_id": message_id, "error": exc.title})
        Message.objects.filter(pk=message_id).update(
            payload={**message.payload, "media_error": exc.title[:300]}
        )
        hooks.message_changed(message_id)
