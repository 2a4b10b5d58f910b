"""Attaching a file in the composer: one multipart form with the reply, the same "Take over from
X?" rule, refusals shown in the composer, the file delivered by a real Celery worker, and only
inside the manager's own business."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from inbox.conversations.models import Channel, Chat, Message
from inbox.web import actions
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator
from tests.inbox.conversations.test_manager_attachments import EXE, PDF, PNG
from tests.inbox.tenants import Tenant, tenant
from tests.processes import ProcessGroup, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    return tenant("B")


def _post(user: Any, chat: Chat, name: str, content: bytes, **fields: str) -> Any:
    client = Client()
    client.force_login(user)
    upload = SimpleUploadedFile(name, content, content_type="application/pdf")
    return client.post(f"/inbox/chat/{chat.pk}/reply/", {"attachment": upload, "key": name, **fields},
                       HTTP_HX_REQUEST="true")  # fmt: skip


def test_the_composer_sends_a_multipart_form_with_a_file_input(a: Tenant) -> None:
    client = Client()
    client.force_login(a.manager)

    page = client.get(f"/inbox/chat/{a.chat.pk}/").content.decode()

    assert 'hx-encoding="multipart/form-data"' in page
    assert 'type="file" name="attachment"' in page
    assert "inbox/attach.js" in page


def test_a_png_with_a_caption_goes_out_through_a_real_worker(
    processes: ProcessGroup, settings: Any
) -> None:
    with GraphApiEmulator() as graph:
        settings.WHATSAPP_GRAPH_URL = graph.graph_url
        graph.register_number("106540352242922", "tok-1")
        processes.start_celery_worker("attach-worker", env={"WHATSAPP_GRAPH_URL": graph.graph_url},
                                      concurrency=1)  # fmt: skip
        business = factories.business()
        channel = factories.channel(business, kind=Channel.Kind.CLOUD_API,
                                    phone_number_id="106540352242922", access_token="tok-1")  # fmt: skip
        chat = factories.chat(channel, customer_key="77011234567", customer_phone="77011234567")
        manager = factories.manager(business)

        answer = _post(manager, chat, "table.png", PNG, text="The oak table")

        assert answer.status_code == 200
        message = Message.objects.get(chat=chat, kind=Message.Kind.IMAGE)
        assert message.media_file
        assert message.text == "The oak table"
        wait_for(lambda: Message.objects.get(pk=message.pk).status == Message.Status.SENT,
                 timeout=30, message="the worker sent the image")  # fmt: skip
        (sent,) = graph.sent_to("77011234567")
        assert sent.type == "image"
        assert sent.caption == "The oak table"
        assert graph.uploads[0].content == PNG
        assert Chat.objects.get(pk=chat.pk).assigned_to_id == manager.pk


def test_a_program_named_pdf_is_refused_in_the_composer(a: Tenant) -> None:
    answer = _post(a.manager, a.chat, "invoice.pdf", EXE, text="Your invoice")

    body = answer.content.decode()
    assert "This file cannot be sent: only JPEG, PNG or WebP images" in body
    assert "Your invoice" in body  # the caption stays in the box
    assert not Message.objects.filter(chat=a.chat, direction="out").exists()


def test_a_document_over_the_ceiling_is_refused(a: Tenant, settings: Any) -> None:
    settings.MANAGER_ATTACHMENT_MAX_BYTES = 1024

    body = _post(a.manager, a.chat, "offer.pdf", PDF * 4).content.decode()

    assert "A document can be at most" in body
    assert not Message.objects.filter(chat=a.chat, direction="out").exists()


def test_a_file_to_a_chat_another_manager_has_asks_first(a: Tenant) -> None:
    colleague = factories.manager(a.business, username="colleague")
    a.manager.first_name = "Anna"
    a.manager.save()
    actions.take_over(a.manager, a.chat.pk)

    asked = _post(colleague, a.chat, "offer.pdf", PDF, text="Our offer").content.decode()

    assert "Take over from Anna? Then attach the file again." in asked
    assert "data-reattach" in asked
    assert not Message.objects.filter(chat=a.chat, direction="out").exists()

    _post(colleague, a.chat, "offer2.pdf", PDF, text="Our offer", take_from=str(a.manager.pk))

    sent = Message.objects.get(chat=a.chat, direction="out")
    assert (sent.kind, sent.media_filename, sent.text) == ("document", "offer2.pdf", "Our offer")
    assert Chat.objects.get(pk=a.chat.pk).assigned_to_id == colleague.pk


def test_a_manager_of_b_can_neither_send_into_nor_fetch_from_a(a: Tenant, b: Tenant) -> None:
    assert _post(b.manager, a.chat, "table.png", PNG).status_code == 404
    assert not Message.objects.filter(chat=a.chat, direction="out").exists()

    _post(a.manager, a.chat, "table.png", PNG)
    sent = Message.objects.get(chat=a.chat, direction="out")
    outsider, owner = Client(), Client()
    outsider.force_login(b.manager)
    owner.force_login(a.manager)

    assert outsider.get(f"/inbox/media/{sent.pk}/").status_code == 404
    assert owner.get(f"/inbox/media/{sent.pk}/").content == PNG
    assert (
        f"/inbox/media/{sent.pk}/" not in outsider.get(f"/inbox/chat/{b.chat.pk}/").content.decode()
    )
