"""The chat row and message fragments (Jinja2 templates, inbox/web/jinja.py): whatever a
customer, a manager or an admin typed is text in them, never markup, in every kind of message."""

from __future__ import annotations

import pytest

from inbox.conversations.models import Chat, Label, Message
from inbox.web import fragments
from tests import factories

pytestmark = pytest.mark.django_db

HOSTILE = "<img src=x onerror=alert(1)>\"'&"
RAW = "<img src=x"
# Jinja2 writes quotes as &#34; &#39;, Django's filters (linebreaksbr) as &quot; &#x27;.
ESCAPED = ("&lt;img src=x onerror=alert(1)&gt;&#34;&#39;&amp;",
           "&lt;img src=x onerror=alert(1)&gt;&quot;&#x27;&amp;")  # fmt: skip


def _message(chat: Chat, **fields: object) -> Message:
    message = factories.customer_message(chat, **fields)  # type: ignore[arg-type]
    return Message.objects.select_related("chat", "channel", "sent_by").get(pk=message.pk)


def test_every_typed_text_in_a_row_is_escaped() -> None:
    chat = factories.chat(customer_name=HOSTILE)
    label = Label.objects.create(business=chat.channel.business, name=HOSTILE[:40])
    label.chats.add(chat)
    manager = factories.manager(chat.channel.business)
    manager.first_name = HOSTILE
    manager.save()
    Chat.objects.filter(pk=chat.pk).update(assigned_to=manager)
    chat = Chat.objects.select_related("channel__business", "assigned_to").get(pk=chat.pk)
    chat.last_message = _message(chat, text=HOSTILE)  # type: ignore[attr-defined]

    html = fragments.row(chat)["html"]

    assert RAW not in html
    # The name, the search text, the preview, the label chip and the assignee.
    assert html.count(ESCAPED[0]) == 5
    assert f'<span class="row-name">{ESCAPED[0]}</span>' in html
    assert f'data-labels="{label.pk}"' in html


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Do you deliver to Almaty?", "Do you deliver to Almaty?"),
        ("x" * 90, "x" * 90),
        (
            "Is the Loft bookshelf still available? " * 3,
            ("Is the Loft bookshelf still available? " * 3)[:89] + "…",
        ),
        ("Cafe\u0301 " * 18, "Café " * 18),  # 108 code points, 90 characters once composed
    ],
    ids=["short", "exactly-90", "long", "combining"],
)
def test_a_rows_preview_is_cut_to_90_characters(text: str, shown: str) -> None:
    chat = factories.chat()
    chat = Chat.objects.select_related("channel__business", "assigned_to").get(pk=chat.pk)
    chat.last_message = _message(chat, text=text)  # type: ignore[attr-defined]

    html = fragments.row(chat)["html"]

    assert f'<span class="row-preview">{shown}</span>' in html


@pytest.mark.parametrize(
    "fields",
    [
        {"text": HOSTILE},
        {"text": HOSTILE, "kind": "image"},
        {"text": "", "kind": "document", "media_filename": HOSTILE},
        {"text": HOSTILE, "kind": "location"},
        {"text": HOSTILE, "kind": "reaction"},
        {
            "text": "",
            "kind": "voice",
            "transcript_status": "done",
            "transcript_confidence": 0.5,
            "transcript_segments": [{"text": HOSTILE, "words": [{"word": HOSTILE, "low": True}]}],
        },
        {
            "text": "",
            "kind": "voice",
            "transcript_status": "done",
            "transcript_segments": [{"text": HOSTILE}],
        },
        {"text": "x", "status": "failed", "error_title": HOSTILE},
    ],
    ids=["text", "caption", "filename", "location", "reaction", "words", "segment", "error"],
)
def test_every_typed_text_in_a_message_is_escaped(fields: dict[str, object]) -> None:
    chat = factories.chat(customer_name=HOSTILE)

    html = fragments.message(_message(chat, **fields))["html"]

    assert RAW not in html
    assert any(escaped in html for escaped in ESCAPED)


def test_a_voice_note_without_a_confidence_still_renders() -> None:
    chat = factories.chat()
    voice = _message(
        chat,
        text="",
        kind="voice",
        transcript_status="done",
        transcript_confidence=None,
        transcript_segments=[],
    )

    html = fragments.message(voice)["html"]

    assert "No speech heard." in html
    assert "Transcript confidence %" in html
    assert "below this channel's threshold" not in html


def test_a_message_whose_payload_is_not_an_object_still_renders() -> None:
    chat = factories.chat()
    odd = _message(chat, text="still here", payload=["not", "an", "object"])

    html = fragments.message(odd)["html"]

    assert '<p class="msg-text">still here</p>' in html
