"""A manager attaches a photo in a real browser on the live stack: it is uploaded to the Cloud
API emulator and sent by its media id, appears in the chat as an image on every open page, and
its delivery status follows the platform's status webhooks live."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest

from inbox.conversations.models import Chat, Message
from inbox.web import actions
from tests import factories
from tests.browser.support import (
    CUSTOMER,
    PHONE,
    PHONE_NUMBER_ID,
    csp_violations,
    in_thread,
    logged_in,
    shot,
)
from tests.emulators.graph_api import GraphApiEmulator, envelope, status_update
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


def png(width: int = 96, height: int = 64) -> bytes:
    """A real (decodable) PNG: a warm oak-coloured gradient."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(
        b"\x00" + b"".join(bytes((150 + x // 2, 100 + y, 60)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))  # fmt: skip


def test_a_manager_sends_a_photo_with_a_caption_and_sees_it_delivered(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    photo = png()
    chat = factories.chat(people["channel"], customer_key=CUSTOMER, customer_phone=CUSTOMER,
                          customer_name="Aigerim")  # fmt: skip
    factories.customer_message(chat, "Can I see the oak table?")
    anna = logged_in(browser, stack, "anna")
    boris = logged_in(browser, stack, "boris", viewport=PHONE)
    for page in (anna, boris):
        page.goto(f"{stack}/inbox/chat/{chat.pk}/")
        expect(page.locator("#live-status")).to_have_attribute("data-state", "live")

    anna.locator("[data-attach-input]").set_input_files(
        {"name": "oak-table.png", "mimeType": "image/png", "buffer": photo}
    )
    expect(anna.locator("[data-attach-chosen]")).to_contain_text("oak-table.png")
    box = anna.locator("[data-composer=reply] textarea")
    box.fill("The oak table, 120 000 KZT")
    box.press("Enter")  # Enter sends a file too; the text is its caption

    message = wait_for(lambda: Message.objects.filter(chat=chat, kind="image").first())
    for page in (anna, boris):
        image = page.locator(f"#msg-{message.pk} .msg-image img")
        expect(image).to_be_visible()
        expect(page.locator(f"#msg-{message.pk}")).to_contain_text("The oak table, 120 000 KZT")
        expect(page.locator(f"#msg-{message.pk} [data-status]")).to_have_text("Sent")
        assert image.evaluate("img => img.naturalWidth") == 96  # the kept file, served to managers
    expect(anna.locator("[data-attach-chosen]")).to_be_hidden()  # a fresh composer
    (upload,) = graph.uploads
    assert upload.content == photo
    assert upload.mime_type == "image/png"
    (sent,) = graph.sent_to(CUSTOMER)
    assert (sent.type, sent.media_id, sent.caption) == ("image", upload.media_id,
                                                        "The oak table, 120 000 KZT")  # fmt: skip

    # The platform's status webhooks move the attachment's status on both pages, live.
    for status, label in (("delivered", "Delivered"), ("read", "Read")):
        graph.deliver(envelope(PHONE_NUMBER_ID, statuses=[status_update(sent.wamid, status,
                                                                        CUSTOMER)]))  # fmt: skip
        for page in (anna, boris):
            expect(page.locator(f"#msg-{message.pk} [data-status]")).to_have_text(label)
    shot(anna, "attachments-desktop")
    shot(boris, "attachments-phone")
    assert Chat.objects.get(pk=chat.pk).assigned_to_id == people["anna"].pk
    assert csp_violations == []


def test_a_file_for_a_colleagues_chat_asks_first_and_a_refused_one_says_why(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    chat = factories.chat(people["channel"], customer_key=CUSTOMER, customer_phone=CUSTOMER)
    factories.customer_message(chat, "Send me the invoice")
    in_thread(actions.take_over, people["anna"], chat.pk)
    boris = logged_in(browser, stack, "boris", viewport=PHONE)
    boris.goto(f"{stack}/inbox/chat/{chat.pk}/")
    ask = boris.locator("[data-takeover-ask]")

    # A program named like a PDF: asked first (Anna has the chat), then refused by content.
    boris.locator("[data-attach-input]").set_input_files(
        {"name": "invoice.pdf", "mimeType": "application/pdf", "buffer": b"MZ\x90\x00" + bytes(64)}
    )
    boris.locator("[data-composer=reply] [data-action=send]").click()
    expect(ask).to_contain_text("Take over from Anna Manager?")
    boris.locator("[data-action=take-over-and-send]").click()
    expect(boris.locator("[data-composer-error]")).to_contain_text("This file cannot be sent")
    shot(boris, "attachments-refused-phone")
    assert graph.uploads == []
    assert graph.sent == []
    assert not Message.objects.filter(chat=chat, direction="out").exists()

    # A real PDF with a caption: asked again, confirmed, sent as a document with its name.
    boris.locator("[data-attach-input]").set_input_files(
        {"name": "invoice.pdf", "mimeType": "application/pdf", "buffer": b"%PDF-1.7\n%%EOF\n"}
    )
    boris.locator("[data-composer=reply] textarea").fill("Your invoice")
    boris.locator("[data-composer=reply] [data-action=send]").click()
    expect(ask).to_be_visible()
    assert graph.uploads == []
    boris.locator("[data-action=take-over-and-send]").click()
    wait_for(lambda: graph.sent_to(CUSTOMER), message="the document was sent")
    (sent,) = graph.sent_to(CUSTOMER)
    assert (sent.type, sent.filename, sent.caption) == ("document", "invoice.pdf", "Your invoice")
    document = Message.objects.get(chat=chat, kind="document")
    expect(boris.locator(f"#msg-{document.pk} .msg-document")).to_contain_text("invoice.pdf")
    assert Chat.objects.get(pk=chat.pk).assigned_to_id == people["boris"].pk
    assert csp_violations == []
