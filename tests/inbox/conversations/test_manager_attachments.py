"""A manager's image or document: checked by content, kept, then uploaded and sent through each
transport (Cloud API emulator, bridge emulator, sandbox), with the provider's errors shown.

The delivery task's body runs here in the test's process, as a worker would run it; the path
through a real Celery worker is covered in tests/inbox/web/test_attachment_views.py and the
browser test."""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest

from inbox.conversations import manager_attachments
from inbox.conversations.delivery_status import apply as apply_status
from inbox.conversations.events import StatusEvent
from inbox.conversations.manager_attachments import FileType, Refused, check, send_attachment
from inbox.conversations.models import Channel, Chat, Message, Owner
from inbox.conversations.transport_registry import transport_for
from inbox.conversations.transports import OutgoingMedia, PermanentSendError
from tests import factories
from tests.emulators.bridge import BridgeEmulator
from tests.emulators.graph_api import GraphApiEmulator

pytestmark = pytest.mark.django_db(transaction=True)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
PDF = b"%PDF-1.7\n" + b"1 0 obj << >> endobj\n" * 50 + b"%%EOF\n"
EXE = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff" + bytes(200)
PHONE = "106540352242922"


def office_file(main_type: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "[Content_Types].xml",
            f'<?xml version="1.0"?><Types><Override PartName="/x" ContentType="{main_type}"/>'
            "</Types>",
        )
        archive.writestr("word/document.xml", "<w:document/>")
    return buffer.getvalue()


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        emulator.register_number(PHONE, "tok-1")
        yield emulator


@pytest.fixture
def cloud_chat(graph: GraphApiEmulator) -> Chat:
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id=PHONE, access_token="tok-1"
    )
    chat = factories.chat(channel, customer_key="77011234567", customer_phone="77011234567")
    factories.customer_message(chat, "Can you send a photo of the table?")
    return chat


def _send(chat: Chat, content: bytes, filename: str, caption: str = "") -> Message:
    """What the inbox does on a manager's upload, then the delivery task as the worker runs it."""
    checked = check(content, filename, channel_kind=chat.channel.kind)
    message = manager_attachments.send(chat.pk, checked, caption, manager=None)
    send_attachment(message.pk)
    return Message.objects.get(pk=message.pk)


class TestByContent:
    def test_types_are_told_by_their_bytes_not_their_names(self) -> None:
        docx = office_file("application/vnd.openxmlformats-officedocument."
                           "wordprocessingml.document.main+xml")  # fmt: skip
        xlsx = office_file("application/vnd.openxmlformats-officedocument."
                           "spreadsheetml.sheet.main+xml")  # fmt: skip
        assert check(PNG, "photo.pdf", channel_kind="bridge").file_type == FileType.PNG
        assert (
            check(b"\xff\xd8\xff\xe0" + bytes(100), "a", channel_kind="x").file_type
            == FileType.JPEG
        )
        assert (
            check(b"RIFF\x10\x00\x00\x00WEBPVP8 ", "w.png", channel_kind="bridge").kind == "image"
        )
        assert check(PDF, "offer", channel_kind="bridge").filename == "offer.pdf"
        assert check(docx, "contract.docx", channel_kind="x").file_type == FileType.DOCX
        assert check(xlsx, "prices.xlsx", channel_kind="x").file_type == FileType.XLSX
        assert check(b"sku,price\nT1,120000\n", "p.csv", channel_kind="x").file_type == FileType.CSV
        assert check("Привет".encode(), "note.txt", channel_kind="x").file_type == FileType.TEXT

    @pytest.mark.parametrize(
        ("content", "name"),
        [
            (EXE, "invoice.pdf"),  # a program named like a PDF
            (EXE, "notes.txt"),
            (b"PK\x03\x04" + bytes(60), "contract.docx"),  # not a real zip
            (office_file("application/vnd.android.package-archive"), "app.docx"),
            (b"GIF89a" + bytes(40), "anim.png"),
            (b"", "empty.pdf"),
        ],
    )
    def test_anything_else_is_refused_with_what_may_be_sent(
        self, content: bytes, name: str
    ) -> None:
        with pytest.raises(Refused) as refused:
            check(content, name, channel_kind="bridge")

        assert "cannot be sent" in refused.value.title or "empty" in refused.value.title

    def test_images_over_5_mb_and_documents_over_the_setting_are_refused(
        self, settings: Any
    ) -> None:
        settings.MANAGER_ATTACHMENT_MAX_BYTES = 4096
        with pytest.raises(Refused, match="An image can be at most 5 MB"):
            check(PNG + bytes(5 * 1024 * 1024), "big.png", channel_kind="bridge")
        with pytest.raises(Refused, match="A document can be at most"):
            check(PDF * 20, "big.pdf", channel_kind="bridge")
        assert check(PDF, "small.pdf", channel_kind="bridge").kind == "document"

    def test_webp_is_refused_for_the_cloud_api_which_cannot_send_it(self) -> None:
        with pytest.raises(Refused, match="WebP"):
            check(b"RIFF\x10\x00\x00\x00WEBPVP8 ", "w.webp", channel_kind=Channel.Kind.CLOUD_API)


class TestCloudApi:
    def test_the_file_is_uploaded_then_sent_by_its_media_id(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        message = _send(cloud_chat, PNG, "table.png", "The oak table, 120 000 KZT")

        (upload,) = graph.uploads
        assert upload.content == PNG
        assert upload.mime_type == "image/png"
        (sent,) = graph.sent_to("77011234567")
        assert (sent.type, sent.media_id, sent.caption) == ("image", upload.media_id,
                                                            "The oak table, 120 000 KZT")  # fmt: skip
        assert message.status == Message.Status.SENT
        assert message.provider_message_id == sent.wamid
        assert message.media_ref == upload.media_id
        assert (message.kind, message.author, message.text) == ("image", "manager",
                                                                "The oak table, 120 000 KZT")  # fmt: skip
        with message.media_file.open("rb") as kept:  # kept like a customer's attachment
            assert kept.read() == PNG
        assert Chat.objects.get(pk=cloud_chat.pk).owner == Owner.HUMAN

    def test_a_document_goes_with_its_filename(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        message = _send(cloud_chat, PDF, "Offer 12.pdf")

        (sent,) = graph.sent_to("77011234567")
        assert (sent.type, sent.filename, sent.caption) == ("document", "Offer 12.pdf", "")
        assert graph.uploads[0].mime_type == "application/pdf"
        assert message.status == Message.Status.SENT

    def test_a_retry_after_the_upload_worked_sends_the_same_media_id(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        graph.fail_next_sends(131000, times=1)  # "Something went wrong": transient

        message = _send(cloud_chat, PNG, "table.png")

        assert len(graph.uploads) == 1
        assert [m for m, p in graph.requests if p.endswith("/media")] == ["POST"]
        (sent,) = graph.sent_to("77011234567")
        assert sent.media_id == graph.uploads[0].media_id
        assert message.status == Message.Status.SENT

    def test_a_refused_upload_fails_the_message_with_the_providers_title(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        graph.fail_next_uploads(131053)

        message = _send(cloud_chat, PNG, "table.png")

        assert message.status == Message.Status.FAILED
        assert (message.error_code, message.error_title) == ("131053", "Media upload error")
        assert graph.sent == []

    def test_a_bad_token_fails_with_the_token_explained(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        Channel.objects.filter(pk=cloud_chat.channel_id).update(access_token="expired")

        message = _send(cloud_chat, PDF, "offer.pdf")

        assert message.status == Message.Status.FAILED
        assert message.error_code == "190"
        assert "access token" in message.error_title
        assert graph.uploads == []

    def test_the_platform_refuses_types_and_sizes_it_does_not_take(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        transport = transport_for(cloud_chat.channel)
        program = OutgoingMedia("document", EXE, "application/x-msdownload", "a.exe", "")
        huge = OutgoingMedia("image", PNG + bytes(6 * 1024 * 1024), "image/png", "b.png", "")

        with pytest.raises(PermanentSendError) as unsupported:
            transport.upload_media(cloud_chat, program)
        with pytest.raises(PermanentSendError) as too_big:
            transport.upload_media(cloud_chat, huge)

        assert unsupported.value.code == "131053"
        assert "Unsupported file type" in unsupported.value.title
        assert too_big.value.code == "131053"
        assert "too big" in too_big.value.title
        assert graph.uploads == []

    def test_delivery_statuses_reach_the_attachment(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        message = _send(cloud_chat, PNG, "table.png")

        for status in ("delivered", "read"):
            apply_status(StatusEvent(cloud_chat.channel_id, message.provider_message_id,
                                     status, int(time.time())))  # type: ignore[arg-type]  # fmt: skip

        assert Message.objects.get(pk=message.pk).status == Message.Status.READ


def test_the_bridge_gets_the_file_with_the_id_the_inbox_chose() -> None:
    with BridgeEmulator(token="bridge-secret") as bridge:
        channel = factories.channel(kind=Channel.Kind.BRIDGE, bridge_url=bridge.base_url,
                                    bridge_token="bridge-secret")  # fmt: skip
        chat = factories.chat(channel, customer_key="77011234567@s.whatsapp.net")

        message = _send(chat, PDF, "offer.pdf", "Our offer")

        (sent,) = bridge.sent_to("77011234567@s.whatsapp.net")
        assert (sent.kind, sent.content, sent.mime_type) == ("document", PDF, "application/pdf")
        assert (sent.filename, sent.text, sent.id) == ("offer.pdf", "Our offer",
                                                       message.provider_message_id)  # fmt: skip
        assert message.status == Message.Status.SENT

        bridge.fail_sends_with = 403
        refused = _send(chat, PNG, "table.png")
        assert refused.status == Message.Status.FAILED
        assert refused.error_title == "the bridge refused the message (HTTP 403)"


def test_in_the_sandbox_the_file_appears_in_the_conversation(
    client: Any, django_user_model: Any
) -> None:
    business = factories.business()
    channel = factories.channel(business, kind=Channel.Kind.SANDBOX)
    user = factories.manager(business)
    client.force_login(user)
    chat = factories.chat(channel, customer_key=f"sandbox-user-{user.pk}")

    message = _send(chat, PNG, "table.png", "Here it is")

    assert message.status == Message.Status.SENT
    page = client.get(f"/inbox/sandbox/{channel.pk}/").content.decode()
    assert f'src="/inbox/media/{message.pk}/"' in page
    assert "Here it is" in page
    assert client.get(f"/inbox/media/{message.pk}/").content == PNG
