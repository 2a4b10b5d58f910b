"""The transport interface: how a chat's messages leave the inbox, whichever way the business
is connected.

A transport sends text and managers' attachments to the customer and fetches customers'
attachments; where the provider has them, it marks messages read and shows "typing…". The
implementations live in `integrations/` (Cloud API, linked-device bridge, sandbox) and import
this module; the core finds the one for a channel through
`inbox.conversations.transport_registry`, so nothing here knows which transports exist. Their
HTTP clients come from `inbox.platform.http`, and their errors are its `Transient` /
`Permanent` failures: `TransientSendError` carries the wait a provider asked for
(`retry_after`), which the send's retries honour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from inbox.platform.http import Permanent, Transient

if TYPE_CHECKING:
    from inbox.conversations.models import Chat, Message


class SendError(Exception):
    """Sending failed. `permanent` errors will fail the same way again; transient ones may not.
    Raised as itself only for a send that was not tried (code "cancelled")."""

    permanent = False

    def __init__(self, title: str, *, code: str = "", retry_after: float | None = None) -> None:
        super().__init__(f"{code}: {title}" if code else title)
        self.code = code
        self.title = title
        self.retry_after = retry_after


class TransientSendError(SendError, Transient):
    permanent = False


class PermanentSendError(SendError, Permanent):
    permanent = True


class MediaError(Exception):
    """An attachment could not be fetched; `permanent` as for SendError. `MediaError(title,
    permanent=…)` gives a `PermanentMediaError` or a `TransientMediaError`."""

    permanent: bool

    def __new__(cls, title: str, *args: Any, permanent: bool = False, **kwargs: Any) -> MediaError:
        if cls is MediaError:
            cls = PermanentMediaError if permanent else TransientMediaError
        return super().__new__(cls, title)

    def __init__(self, title: str, *, permanent: bool) -> None:
        super().__init__(title)
        self.title = title
        self.permanent = permanent


class TransientMediaError(MediaError, Transient):
    pass


class PermanentMediaError(MediaError, Permanent):
    pass


@dataclass(frozen=True)
class MediaBlob:
    content: bytes
    mime_type: str
    filename: str = ""


@dataclass(frozen=True)
class OutgoingMedia:
    """A manager's attachment on its way out, read from storage (never from the request).
    `media_ref` is the provider's id of an earlier successful upload ("" when none): a retry
    sends that id instead of uploading the file again."""

    kind: str  # "image" | "document"
    content: bytes
    mime_type: str
    filename: str
    caption: str
    media_ref: str = ""


@dataclass(frozen=True)
class OutgoingTemplate:
    """An approved WhatsApp message template on its way out: its name, language code and the
    `components` with the filled parameters (inbox/conversations/templates.py)."""

    name: str
    language: str
    components: list[dict[str, Any]]


class Transport(Protocol):
    # True when this transport lets us choose the message id before sending (bridge, sandbox):
    # the id is recorded before the send, so the echo of our own message can never arrive first.
    assigns_message_ids: bool

    def send_text(self, chat: Chat, text: str, *, client_message_id: str) -> str:
        """Send `text` to the chat's customer; returns the provider's message id."""
        ...

    def fetch_media(self, message: Message) -> MediaBlob:
        """Download the attachment of an inbound message."""
        ...

    def upload_media(self, chat: Chat, media: OutgoingMedia) -> str:
        """Hand the file to the provider before the send; returns its media id, or "" for a
        transport that sends the file with the message itself."""
        ...

    def send_media(self, chat: Chat, media: OutgoingMedia, *, client_message_id: str) -> str:
        """Send an image or document (uploaded first when `upload_media` gave an id); returns
        the provider's message id."""
        ...

    def mark_read(self, chat: Chat, *, message_id: str, typing: bool) -> None:
        """A courtesy while the assistant composes: mark the customer's messages up to
        `message_id` (the provider's id) read and, with `typing`, show "typing…". May raise
        anything; the caller logs and ignores it. `NoReadReceipts` is the do-nothing default."""
        ...


class NoReadReceipts:
    """For a transport whose provider has no read mark or typing indicator to show."""

    def mark_read(self, chat: Chat, *, message_id: str, typing: bool) -> None:
        return None
