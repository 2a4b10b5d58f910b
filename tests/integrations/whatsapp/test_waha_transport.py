"""The WAHA transport and connection check against the WAHA emulator over HTTP: the id each
engine's answer gives, WAHA's errors as transient or permanent, media both ways, and a voice
note downloaded through WAHA and transcribed as today."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from django.test import override_settings

from assistant.speech import voice_notes
from inbox.conversations import ingest, outbound
from inbox.conversations.models import Channel, Chat, Message
from inbox.conversations.transport_registry import check_connection, transport_for
from inbox.conversations.transports import OutgoingMedia, PermanentSendError, TransientSendError
from integrations.whatsapp.gateways import waha_events
from tests import factories
from tests.emulators.openai_audio import SpeechEmulator, Step, verbose_body
from tests.emulators.waha import WahaEmulator
from tests.speech_samples import encode, tone

pytestmark = pytest.mark.django_db

KEY = "waha-key-2"
CUSTOMER = "77011234567@c.us"


@pytest.fixture
def waha() -> Iterator[WahaEmulator]:
    with WahaEmulator(api_key=KEY, echo_sends=False) as emulator:
        yield emulator


def _channel(waha: WahaEmulator, **kwargs: object) -> Channel:
    fields = {"bridge_url": waha.base_url, "bridge_token": KEY, "gateway_instance": "default"}
    return factories.channel(kind=Channel.Kind.WAHA, **{**fields, **kwargs})


def _chat(channel: Channel) -> Chat:
    return factories.chat(channel, customer_key=CUSTOMER)


@pytest.mark.parametrize("engine", ["GOWS", "WEBJS", "NOWEB"])
def test_send_text_returns_the_short_id_the_echo_and_acks_carry(
    waha: WahaEmulator, engine: str
) -> None:
    waha.engine = engine
    chat = _chat(_channel(waha))

    message_id = transport_for(chat.channel).send_text(chat, "Yes, in stock", client_message_id="")

    (sent,) = waha.sent_to(CUSTOMER)
    assert (sent.text, message_id) == ("Yes, in stock", sent.id)
    echo = waha.body("message.any", waha.message(CUSTOMER, "Yes", id=sent.id, from_me=True))
    (event,) = waha_events.normalise(echo, chat.channel_id).events
    assert event.provider_message_id == message_id


@pytest.mark.parametrize(
    ("status", "error"), [(429, TransientSendError), (500, TransientSendError),
                          (503, TransientSendError), (401, PermanentSendError),
                          (400, PermanentSendError)],
)  # fmt: skip
def test_errors_are_transient_or_permanent_as_waha_answers(
    waha: WahaEmulator, status: int, error: type[Exception]
) -> None:
    waha.fail_sends_with = status
    chat = _chat(_channel(waha))

    with pytest.raises(error):
        transport_for(chat.channel).send_text(chat, "hi", client_message_id="")


@pytest.mark.parametrize(
    ("state", "error", "code"),
    [("STARTING", TransientSendError, "starting"),
     ("SCAN_QR_CODE", PermanentSendError, "session_scan_qr_code"),
     ("FAILED", PermanentSendError, "session_failed")],
)  # fmt: skip
def test_a_session_that_is_not_working_fails_as_its_state_says(
    waha: WahaEmulator, state: str, error: type[Exception], code: str
) -> None:
    waha.status = state
    chat = _chat(_channel(waha))

    with pytest.raises(error) as raised:
        transport_for(chat.channel).send_text(chat, "hi", client_message_id="")

    assert getattr(raised.value, "code", "") == code


def test_a_wrong_api_key_or_session_is_permanent(waha: WahaEmulator) -> None:
    for channel in (_channel(waha, bridge_token="wrong"), _channel(waha, gateway_instance="x")):
        with pytest.raises(PermanentSendError):
            transport_for(channel).send_text(_chat(channel), "hi", client_message_id="")
    assert waha.sent == []


def test_manager_image_and_document_go_as_base64_files(waha: WahaEmulator) -> None:
    chat = _chat(_channel(waha))
    transport = transport_for(chat.channel)

    for kind, mime in (("image", "image/png"), ("document", "application/pdf")):
        media = OutgoingMedia(kind, b"\x89PNG-or-PDF", mime, f"file.{kind}", "Here it is")
        transport.send_media(chat, media, client_message_id="")

    image, document = waha.sent_to(CUSTOMER)
    assert (image.kind, document.kind) == ("image", "document")
    assert base64.b64decode(image.file["data"]) == b"\x89PNG-or-PDF"
    assert (document.file["mimetype"], document.text) == ("application/pdf", "Here it is")


def test_connection_check_reads_the_session_status(waha: WahaEmulator) -> None:
    channel = _channel(waha)

    assert check_connection(channel) == (True, "session “default” is WORKING")
    waha.status = "SCAN_QR_CODE"
    linked, detail = check_connection(channel) or (None, "")
    assert linked is False
    assert "QR code" in detail
    assert check_connection(_channel(waha, bridge_token="wrong")) == (
        False, "WAHA refused the API key",
    )  # fmt: skip


def test_voice_note_is_downloaded_with_the_api_key_and_transcribed(waha: WahaEmulator) -> None:
    channel = _channel(waha)
    audio = encode(tone(1.0), "ogg_opus")
    payload = waha.media_message(CUSTOMER, "true_x_3EB0V.oga", audio, "audio/ogg; codecs=opus")
    (event,) = waha_events.normalise(waha.body("message", payload), channel.pk).events
    stored = ingest.accept(event)
    assert stored.message_id is not None

    with SpeechEmulator() as speech, override_settings(
        SPEECH_BACKEND="openai", SPEECH_BASE_URL=speech.base_url, SPEECH_TIMEOUT_SECONDS=5
    ):  # fmt: skip
        speech.script(Step.verbose(verbose_body("two oak chairs please")))
        assert voice_notes.transcribe_message(stored.message_id) == "transcribed"

    message = Message.objects.get(pk=stored.message_id)
    assert message.kind == Message.Kind.VOICE
    assert message.transcript == "two oak chairs please"
    assert waha.media_requests[-1].get("X-Api-Key") == KEY


def test_the_api_key_is_not_sent_to_a_media_url_elsewhere(waha: WahaEmulator) -> None:
    with WahaEmulator(api_key="storage") as storage:  # another origin: S3, say
        channel = _channel(waha)
        chat = _chat(channel)
        payload = storage.media_message(CUSTOMER, "a.jpg", b"JPEG", "image/jpeg")
        (event,) = waha_events.normalise(storage.body("message", payload), channel.pk).events
        message = factories.customer_message(chat, "", kind=Message.Kind.IMAGE,
                                             media_ref=event.media.ref if event.media else "")  # fmt: skip

        with pytest.raises(Exception):  # noqa: B017 - the storage refuses a request without its key
            transport_for(channel).fetch_media(message)

        assert storage.media_requests[-1].get("X-Api-Key") is None


def test_bot_reply_records_the_id_waha_gave(waha: WahaEmulator) -> None:
    chat = _chat(_channel(waha))

    reply = outbound.record_outbound(chat, "Hello!", author=Message.Author.BOT, manager=None)
    outcome = outbound.deliver_recorded(reply)

    (sent,) = waha.sent_to(CUSTOMER)
    assert (outcome.sent, outcome.provider_message_id) == (True, sent.id)
    assert outbound.is_bot_sent(chat.pk, sent.id)


def test_mark_read_sends_seen_then_typing_for_the_chat(waha: WahaEmulator) -> None:
    chat = _chat(_channel(waha))

    transport_for(chat.channel).mark_read(chat, message_id="3EB0AA", typing=True)
    transport_for(chat.channel).mark_read(chat, message_id="3EB0AB", typing=False)

    assert waha.presence == [
        ("/api/sendSeen", CUSTOMER),
        ("/api/startTyping", CUSTOMER),
        ("/api/sendSeen", CUSTOMER),
    ]
    assert waha.sent == []


def test_mark_read_on_a_session_waha_does_not_know_raises_for_the_caller_to_log(
    waha: WahaEmulator,
) -> None:
    chat = _chat(_channel(waha, gateway_instance="other"))

    with pytest.raises(TransientSendError):
        transport_for(chat.channel).mark_read(chat, message_id="3EB0AA", typing=True)
    assert waha.presence == []
