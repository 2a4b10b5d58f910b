"""Playing back a customer's voice note: byte ranges for seeking, the right content type, and
only for managers who may see that chat."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from asgiref.sync import async_to_sync
from django.core.files.base import ContentFile
from django.test import AsyncClient, Client

from inbox.conversations.models import Message
from tests import factories

pytestmark = pytest.mark.django_db

AUDIO = bytes(range(256)) * 40  # 10240 bytes; content does not matter to the view
URL = "/inbox/media/{}/"


@pytest.fixture
def voice() -> Iterator[Message]:
    biz = factories.business()
    chat = factories.chat(factories.channel(biz))
    message = factories.customer_message(chat, "", kind=Message.Kind.VOICE,
                                         media_mime="audio/ogg; codecs=opus")  # fmt: skip
    message.media_file.save(f"voice-{message.pk}.ogg", ContentFile(AUDIO))
    yield message
    message.media_file.delete(save=False)


def _client_for(message: Message, **membership: object) -> Client:
    client = Client()
    client.force_login(factories.manager(message.channel.business, **membership))  # type: ignore[arg-type]
    return client


def _body(response) -> bytes:  # type: ignore[no-untyped-def]
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_manager_plays_the_whole_file_with_its_type(voice: Message) -> None:
    response = _client_for(voice).get(URL.format(voice.pk))

    assert response.status_code == 200
    assert response["Content-Type"] == "audio/ogg; codecs=opus"
    assert response["Accept-Ranges"] == "bytes"
    assert response["Content-Length"] == str(len(AUDIO))
    assert response["Content-Disposition"].startswith("inline")
    assert response["Cache-Control"].startswith("private")
    assert _body(response) == AUDIO


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [
        ("bytes=0-99", 0, 99),
        ("bytes=100-", 100, len(AUDIO) - 1),
        ("bytes=-500", len(AUDIO) - 500, len(AUDIO) - 1),
        ("bytes=10000-99999", 10000, len(AUDIO) - 1),  # end past the file is cut to it
        ("bytes=0-0", 0, 0),
    ],
)
def test_a_range_request_gets_that_part_only(
    voice: Message, header: str, start: int, end: int
) -> None:
    response = _client_for(voice).get(URL.format(voice.pk), HTTP_RANGE=header)

    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes {start}-{end}/{len(AUDIO)}"
    assert response["Content-Length"] == str(end - start + 1)
    assert response["Content-Type"] == "audio/ogg; codecs=opus"
    assert _body(response) == AUDIO[start : end + 1]


@pytest.mark.parametrize("header", [f"bytes={len(AUDIO)}-", "bytes=500-100", "bytes=-0"])
def test_a_range_outside_the_file_is_416(voice: Message, header: str) -> None:
    response = _client_for(voice).get(URL.format(voice.pk), HTTP_RANGE=header)

    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{len(AUDIO)}"


def test_several_ranges_or_a_changed_file_get_the_whole_file(voice: Message) -> None:
    client = _client_for(voice)

    several = client.get(URL.format(voice.pk), HTTP_RANGE="bytes=0-9,20-29")
    stale = client.get(URL.format(voice.pk), HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE='"old"')
    fresh = client.get(URL.format(voice.pk), HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE=several["ETag"])

    assert (several.status_code, _body(several)) == (200, AUDIO)
    assert (stale.status_code, _body(stale)) == (200, AUDIO)
    assert (fresh.status_code, _body(fresh)) == (206, AUDIO[:10])


def test_head_tells_the_size_without_the_body(voice: Message) -> None:
    response = _client_for(voice).head(URL.format(voice.pk))

    assert response.status_code == 200
    assert response["Content-Length"] == str(len(AUDIO))
    assert response.content == b""


def test_range_playback_through_the_asgi_handler(voice: Message) -> None:
    user = factories.manager(voice.channel.business)

    async def fetch() -> tuple[int, str, bytes]:
        client = AsyncClient()
        await client.aforce_login(user)
        response = await client.get(URL.format(voice.pk), headers={"Range": "bytes=1000-1999"})
        return response.status_code, response["Content-Range"], response.content

    status, content_range, body = async_to_sync(fetch)()

    assert (status, content_range) == (206, f"bytes 1000-1999/{len(AUDIO)}")
    assert body == AUDIO[1000:2000]


def test_managers_of_another_business_get_404(voice: Message) -> None:
    outsider = Client()
    outsider.force_login(factories.manager(factories.business()))

    assert outsider.get(URL.format(voice.pk)).status_code == 404
    assert outsider.get(URL.format(voice.pk), HTTP_RANGE="bytes=0-9").status_code == 404


def test_a_manager_assigned_to_another_channel_gets_404(voice: Message) -> None:
    other_channel = factories.channel(voice.channel.business)
    user = factories.manager(voice.channel.business)
    user.memberships.get().channels.add(other_channel)
    client = Client()
    client.force_login(user)

    assert client.get(URL.format(voice.pk)).status_code == 404


def test_anonymous_visitors_are_sent_to_log_in(voice: Message) -> None:
    response = Client().get(URL.format(voice.pk))

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_unknown_message_or_one_without_media_is_404(voice: Message) -> None:
    client = _client_for(voice)
    text = factories.customer_message(voice.chat, "hello")

    assert client.get(URL.format(text.pk)).status_code == 404
    assert client.get(URL.format(voice.pk + 10_000)).status_code == 404


def test_a_file_that_is_not_media_is_a_download_never_a_page(voice: Message) -> None:
    page = factories.customer_message(voice.chat, "", kind=Message.Kind.DOCUMENT,
                                      media_mime="text/html", media_filename="x<script>.html")  # fmt: skip
    page.media_file.save("page.html", ContentFile(b"<script>alert(1)</script>"))
    try:
        response = _client_for(voice).get(URL.format(page.pk))
    finally:
        page.media_file.delete(save=False)

    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment")
    assert "<" not in response["Content-Disposition"]
    assert response["Content-Security-Policy"] == "sandbox"


def test_a_huge_range_is_answered_in_part_and_says_so(voice: Message) -> None:
    from inbox.web.media import MAX_RANGE

    big = factories.customer_message(voice.chat, "", kind=Message.Kind.AUDIO,
                                     media_mime="audio/mpeg")  # fmt: skip
    content = bytes(range(256)) * (MAX_RANGE // 256 + 4096)
    big.media_file.save("long.mp3", ContentFile(content))
    try:
        response = _client_for(voice).get(URL.format(big.pk), HTTP_RANGE="bytes=0-")
    finally:
        big.media_file.delete(save=False)

    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes 0-{MAX_RANGE - 1}/{len(content)}"
    assert _body(response) == content[:MAX_RANGE]


def test_the_voice_partial_plays_the_audio_and_marks_doubtful_words(voice: Message) -> None:
    from django.template.loader import render_to_string

    voice.transcript_status = Message.TranscriptStatus.DONE
    voice.transcript = "two chairs <b>now</b>"
    voice.transcript_confidence = 0.42
    voice.transcript_segments = [
        {"text": "two chairs <b>now</b>", "words": [
            {"word": "two", "probability": 0.9, "low": False},
            {"word": "chairs", "probability": 0.2, "low": True},
            {"word": "<b>now</b>", "probability": 0.95, "low": False},
        ]},
    ]  # fmt: skip

    html = render_to_string("inbox/_voice_note.html", {"message": voice})

    assert f'src="/inbox/media/{voice.pk}/"' in html
    assert 'class="low-confidence"' in html
    assert ">chairs</mark>" in html
    assert "two <mark" in html
    assert "&lt;b&gt;now&lt;/b&gt;" in html  # customer words are escaped
    assert "Transcript confidence 42%" in html
    assert "below this channel's threshold" in html


def test_a_non_ascii_name_is_sent_as_rfc_6266_with_an_ascii_fallback(voice: Message) -> None:
    """Browsers do not decode RFC 2047 (`=?utf-8?b?…?=`) in Content-Disposition: a Cyrillic
    attachment was saved under that gibberish."""
    doc = factories.customer_message(voice.chat, "", kind=Message.Kind.DOCUMENT,
                                     media_mime="application/pdf",
                                     media_filename='Счёт "март" №5.pdf')  # fmt: skip
    doc.media_file.save("invoice.pdf", ContentFile(b"%PDF-1.4"))
    try:
        response = _client_for(voice).get(URL.format(doc.pk))
    finally:
        doc.media_file.delete(save=False)

    disposition = response["Content-Disposition"]
    assert "=?utf-8?" not in disposition.lower()
    assert disposition.startswith('attachment; filename="')
    fallback = disposition.split('filename="', 1)[1].split('"', 1)[0]
    assert fallback.isascii()
    assert fallback.endswith(".pdf")
    assert "filename*=UTF-8''%D0%A1%D1%87%D1%91%D1%82" in disposition
    assert disposition.endswith(".pdf")


def test_an_ascii_name_keeps_its_plain_filename(voice: Message) -> None:
    response = _client_for(voice).get(URL.format(voice.pk))

    assert response["Content-Disposition"] == f'inline; filename="voice-{voice.pk}.ogg"'
