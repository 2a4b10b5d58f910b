"""The sandbox transport: the customer side is a page in the inbox (/inbox/sandbox/), so a
business can try the assistant on its own price list before going live. Nothing leaves the
server; every reply stays in the chat for review."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inbox.conversations.transports import MediaBlob, MediaError, NoReadReceipts, OutgoingMedia

if TYPE_CHECKING:
    from inbox.conversations.models import Channel, Chat, Message


class SandboxTransport(NoReadReceipts):
    assigns_message_ids = True

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def send_text(self, chat: Chat, text: str, *, client_message_id: str) -> str:
        # The outbound row is the delivery: the sandbox page shows it to the "customer".
        return client_message_id

    def fetch_media(self, message: Message) -> MediaBlob:
        if message.media_file:
            with message.media_file.open("rb") as handle:
                return MediaBlob(handle.read(), message.media_mime, message.media_filename)
        raise MediaError("sandbox messages carry their media as an uploaded file", permanent=True)

    def upload_media(self, chat: Chat, media: OutgoingMedia) -> str:
        return ""  # the file is already kept on the message

    def send_media(self, chat: Chat, media: OutgoingMedia, *, client_message_id: str) -> str:
        # As for text: the stored message is what the sandbox page shows the "customer".
        return client_message_id
