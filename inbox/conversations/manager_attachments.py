"""A manager's image or document to the customer.

The file's type is decided by its content (magic bytes, and for docx/xlsx the zip's
`[Content_Types].xml`), never by its name or the browser's content type: a `.pdf` that is really
a program is refused. Images (JPEG, PNG, WebP) may be at most 5 MB, WhatsApp's image limit;
documents (PDF, DOCX, XLSX, plain text, CSV) at most `MANAGER_ATTACHMENT_MAX_BYTES`.

`send` records the message and keeps the file in storage, exactly like a customer's attachment
(`attachments.keep`), before the `inbox.send_attachment` task is queued: the task reads the file
from storage, and `outbound.deliver` uploads it (Cloud API) or sends it with the message (bridge,
sandbox). The provider's media id is stored on the message, so a retry never uploads twice.
"""

from __future__ import annotations

import io
import logging
import zipfile
from dataclasses import dataclass
from enum import StrEnum

import kombu.exceptions
from celery import shared_task
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext_noop

from inbox.conversations import attachments, hooks, outbound, ownership
from inbox.conversations.models import Channel, Chat, Message
from inbox.conversations.transports import MediaBlob

log = logging.getLogger(__name__)

SEND_TASK = "inbox.send_attachment"
IMAGE_MAX_BYTES = 5 * 1024 * 1024
MAX_CAPTION = 1024
# The part of a docx/xlsx that names what it is; anything larger is not an Office file.
CONTENT_TYPES_MAX_BYTES = 256 * 1024


class FileType(StrEnum):
    JPEG = "image/jpeg"
    PNG = "image/png"
    WEBP = "image/webp"
    PDF = "application/pdf"
    DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    TEXT = "text/plain"
    CSV = "text/csv"


IMAGE_TYPES = frozenset({FileType.JPEG, FileType.PNG, FileType.WEBP})
EXTENSIONS = {
    FileType.JPEG: ".jpg",
    FileType.PNG: ".png",
    FileType.WEBP: ".webp",
    FileType.PDF: ".pdf",
    FileType.DOCX: ".docx",
    FileType.XLSX: ".xlsx",
    FileType.TEXT: ".txt",
    FileType.CSV: ".csv",
}
ALLOWED = "JPEG, PNG or WebP images and PDF, DOCX, XLSX, TXT or CSV documents"


class Refused(Exception):
    """The file cannot be sent; the message says why, for the manager."""

    def __init__(self, title: str) -> None:
        super().__init__(title)
        self.title = title


@dataclass(frozen=True)
class CheckedFile:
    kind: str  # Message.Kind.IMAGE | Message.Kind.DOCUMENT
    file_type: FileType
    filename: str
    content: bytes


def max_document_bytes() -> int:
    return int(settings.MANAGER_ATTACHMENT_MAX_BYTES)


def max_bytes() -> int:
    """The largest upload anything could be (read no more than this from a request)."""
    return max(IMAGE_MAX_BYTES, max_document_bytes())


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):g} MB"


def _office_type(content: bytes) -> FileType | None:
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            info = archive.getinfo("[Content_Types].xml")
            if info.file_size > CONTENT_TYPES_MAX_BYTES:
                return None
            types = archive.read(info)
    except (zipfile.BadZipFile, KeyError, OSError, RuntimeError, ValueError):
        return None
    if b"wordprocessingml.document.main+xml" in types:
        return FileType.DOCX
    if b"spreadsheetml.sheet.main+xml" in types:
        return FileType.XLSX
    return None


def _is_text(content: bytes) -> bool:
    if b"\x00" in content:
        return False
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def sniff(content: bytes, filename: str) -> FileType | None:
    """What the bytes are, or None when they are nothing we send. Plain text has no signature:
    valid UTF-8 without NUL bytes is text, and only then does the name tell TXT from CSV."""
    if content.startswith(b"\xff\xd8\xff"):
        return FileType.JPEG
    if content.startswith(b"\x89PNG\r\n\x1a\n"):
        return FileType.PNG
    if content[:4] == b"RIFF" and content[8:12] == b"WEBP":
        return FileType.WEBP
    if content.startswith(b"%PDF-"):
        return FileType.PDF
    if content.startswith(b"PK\x03\x04"):
        return _office_type(content)
    if content and _is_text(content):
        return FileType.CSV if filename.lower().endswith(".csv") else FileType.TEXT
    return None


def _clean_name(filename: str, file_type: FileType) -> str:
    """The name the customer sees: the manager's, with the extension of what the file is."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1].strip()
    base = "".join(ch for ch in base if ch.isprintable())[:200]
    stem = base.rsplit(".", 1)[0] if "." in base else base
    return f"{stem or 'file'}{EXTENSIONS[file_type]}"


def check(content: bytes, filename: str, *, channel_kind: str) -> CheckedFile:
    """The file as it will be sent; raises Refused with a message for the manager."""
    if not content:
        raise Refused("The file is empty.")
    file_type = sniff(content, filename)
    if file_type is None:
        raise Refused(f"This file cannot be sent: only {ALLOWED}.")
    if file_type in IMAGE_TYPES:
        if file_type == FileType.WEBP and channel_kind == Channel.Kind.CLOUD_API:
            raise Refused("WhatsApp Business does not send WebP images: use a JPEG or PNG.")
        if len(content) > IMAGE_MAX_BYTES:
            raise Refused(f"An image can be at most {_megabytes(IMAGE_MAX_BYTES)}.")
        kind = Message.Kind.IMAGE
    else:
        if len(content) > max_document_bytes():
            raise Refused(f"A document can be at most {_megabytes(max_document_bytes())}.")
        kind = Message.Kind.DOCUMENT
    return CheckedFile(kind, file_type, _clean_name(filename, file_type), content)


def send(
    chat_id: int, checked: CheckedFile, caption: str, *, manager: User | None, source: str = "inbox"
) -> Message:
    """Record the attachment (the chat becomes HUMAN first, as for a text reply), keep its file,
    then queue its delivery. The message shows as "sending" until the task settles it."""
    ownership.manager_replied(chat_id, manager=manager)
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        message = outbound.record_outbound(
            chat,
            caption,
            author=Message.Author.MANAGER,
            manager=manager,
            kind=checked.kind,
            media_mime=checked.file_type.value,
            media_filename=checked.filename,
        )
        message.payload = {"source": source}
        message.save(update_fields=["payload"])
        latest = chat.messages.filter(direction=Message.Direction.INBOUND).aggregate(m=Max("id"))
        chat.answered_up_to = max(chat.answered_up_to, latest["m"] or 0)
        chat.save(update_fields=["answered_up_to"])
    blob = MediaBlob(checked.content, checked.file_type.value, checked.filename)
    try:
        attachments.keep(message, blob)
    except OSError:
        log.exception("attachment.not_kept", extra={"message_id": message.pk})
        _failed(
            message.pk, "storage", gettext_noop("The file could not be stored: nothing was sent.")
        )
        return message
    try:
        send_attachment.delay(message.pk)
    except (OSError, kombu.exceptions.OperationalError):
        log.exception("attachment.not_queued", extra={"message_id": message.pk})
        _failed(
            message.pk, "queue", gettext_noop("The task queue is unavailable: nothing was sent.")
        )
        return message
    log.info(
        "attachment.queued",
        extra={"message_id": message.pk, "chat_id": chat_id, "kind": checked.kind},
    )
    return message


def _failed(message_id: int, code: str, title: str) -> None:
    Message.objects.filter(pk=message_id, status=Message.Status.SENDING).update(
        status=Message.Status.FAILED, status_at=timezone.now(), error_code=code, error_title=title
    )
    hooks.message_changed(message_id)


@shared_task(
    name=SEND_TASK,
    acks_late=True,
    max_retries=0,
    soft_time_limit=240,
    time_limit=300,
    ignore_result=True,
)
def send_attachment(message_id: int) -> None:
    """Deliver one recorded attachment (transient failures are retried inside `deliver`). A
    task delivered again for a message that is no longer "sending" does nothing."""
    if not Message.objects.filter(pk=message_id, status=Message.Status.SENDING).exists():
        return
    outbound.deliver(message_id)
