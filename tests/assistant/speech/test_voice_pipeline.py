"""Voice notes end to end with real processes: the Graph API emulator delivers a webhook and
serves the media, daphne and the ingest consumer store the message, a Celery worker downloads
and transcribes it with the embedded model, and the turn answers, clarifies or hands off.

The audio is real speech made in the run (espeak-ng → ffmpeg OGG/Opus, as WhatsApp sends it).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from assistant.decision import replies
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.speech import voice_notes
from assistant.speech.audio import Pcm, decode
from inbox.conversations.models import Channel, Chat, Handoff, Message, Owner, Turn
from tests import factories
from tests.emulators.graph_api import (
    GraphApiEmulator,
    contact,
    envelope,
    media_message,
    text_message,
)
from tests.processes import ProcessGroup, wait_for
from tests.speech_samples import (
    babble_noise,
    encode,
    ogg_opus,
    silence,
    speak,
    with_noise,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

CUSTOMER = "77019876543"
MAX_SECONDS = 20  # the stack's SPEECH_MAX_SECONDS, so "too long" needs only 25 s of audio
PRICE_LIST = (
    b"SKU,Name,Price,Currency,Availability\n"
    b"TB-201,Oak dining table,120000,KZT,in stock\n"
    b"SF-301,Blue sofa,310000,KZT,in stock\n"
    b"CH-101,Office chair,45000,KZT,in stock\n"
)
_numbers = iter(range(106540352249000, 106540352250000))


@pytest.fixture(scope="module")
def audio(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The voice notes the tests send, made once: clean, noisy, too long."""
    workdir: Path = tmp_path_factory.mktemp("voice")
    question = speak("How much does the oak dining table cost", workdir, "question")
    clean = ogg_opus(question)
    pcm = decode(clean, max_seconds=60)
    noisy = with_noise(pcm, babble_noise(len(pcm.samples), workdir), snr_db=0)
    too_long = np.concatenate([pcm.samples, silence(MAX_SECONDS + 3).samples])
    return {
        "clean": clean,
        "noisy": encode(noisy, "ogg_opus"),
        "too_long": encode(Pcm(too_long), "ogg_opus"),
    }


@pytest.fixture(scope="module")
def graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator(app_secret="voice-secret") as emulator:
        yield emulator


@pytest.fixture(scope="module")
def stack(subprocess_env: dict[str, str], graph: GraphApiEmulator) -> Iterator[str]:
    env = {
        **subprocess_env,
        "WHATSAPP_GRAPH_URL": graph.graph_url,
        "WHATSAPP_APP_SECRET": graph.app_secret,
        "LLM_BASE_URL": "",  # the offline catalogue assistant answers
        "SPEECH_BACKEND": "embedded",
        "SPEECH_MAX_SECONDS": str(MAX_SECONDS),
    }
    group = ProcessGroup(env)
    base = group.start_daphne("voice-web")
    group.start("voice-ingest", [sys.executable, "manage.py", "ingest_worker"])
    group.start_celery_worker("voice-worker")
    graph.webhook_url = f"{base}/webhooks/whatsapp/"
    yield base
    group.stop_all()


@pytest.fixture(autouse=True)
def _reset(graph: GraphApiEmulator) -> None:
    graph.reset()


def _channel(graph: GraphApiEmulator, debounce: float = 1.0) -> Channel:
    pnid = str(next(_numbers))
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id=pnid, access_token="voice-token",
        debounce_seconds=debounce, language="en",
    )  # fmt: skip
    graph.register_number(pnid, "voice-token")
    preview = parse_price_file(PRICE_LIST, "prices.csv")
    apply_price_list(preview, channel.business)
    return channel


def _send_voice(
    graph: GraphApiEmulator, channel: Channel, content: bytes, media_id: str, *, stored: bool = True
) -> None:
    sha = graph.add_media(media_id, content, "audio/ogg; codecs=opus") if stored else ""
    message = media_message(CUSTOMER, "audio", media_id, sha256=sha,
                            mime="audio/ogg; codecs=opus", voice=True)  # fmt: skip
    body = envelope(channel.phone_number_id, messages=[message], contacts=[contact(CUSTOMER)])
    assert graph.deliver(body) == 200


def _voice(channel: Channel) -> Message:
    return wait_for(
        lambda: Message.objects.filter(channel=channel, kind=Message.Kind.VOICE).first(),
        message="the voice note to be stored",
    )


def _settled(message: Message, timeout: float = 90) -> Message:
    def done() -> Message | None:
        message.refresh_from_db()
        return message if message.transcript_status in ("done", "failed") else None

    return wait_for(done, timeout=timeout, message="the transcription to finish")


def _finished_turns(chat_id: int) -> list[Turn]:
    return list(
        Turn.objects.filter(chat_id=chat_id).exclude(outcome=Turn.Outcome.RUNNING).order_by("pk")
    )


def test_voice_note_is_stored_transcribed_and_answered(
    stack: str, graph: GraphApiEmulator, audio: dict[str, bytes]
) -> None:
    channel = _channel(graph)

    _send_voice(graph, channel, audio["clean"], "880001")

    voice = _settled(_voice(channel))
    assert voice.transcript_status == "done"
    assert "oak dining table" in voice.transcript.lower()
    assert voice.transcript_confidence is not None
    assert voice.transcript_confidence >= channel.voice_confidence_threshold
    assert voice.transcript_language == "en"
    words = [w for s in voice.transcript_segments for w in s["words"]]
    assert [w["word"] for w in words][:3] == ["How", "much", "does"]
    assert all({"start", "end", "probability", "low"} <= w.keys() for w in words)
    # the original is kept for playback, byte for byte
    with voice.media_file.open("rb") as f:
        assert f.read() == audio["clean"]
    assert voice.media_mime.startswith("audio/ogg")
    # and the assistant answered the spoken question from the price list
    (turn,) = wait_for(lambda: _finished_turns(voice.chat_id), message="the turn")
    assert turn.outcome == Turn.Outcome.ANSWERED
    (reply,) = wait_for(lambda: graph.sent_to(CUSTOMER), message="the reply")
    assert "120" in reply.text  # the oak table's price


def test_text_sent_while_the_voice_is_transcribed_joins_the_same_turn(
    stack: str, graph: GraphApiEmulator, audio: dict[str, bytes]
) -> None:
    channel = _channel(graph, debounce=1.0)

    _send_voice(graph, channel, audio["clean"], "880002")
    body = envelope(
        channel.phone_number_id,
        messages=[text_message(CUSTOMER, "and delivery to Almaty?")],
        contacts=[contact(CUSTOMER)],
    )
    assert graph.deliver(body) == 200

    voice = _settled(_voice(channel))
    text = Message.objects.get(channel=channel, kind=Message.Kind.TEXT, direction="in")
    (turn,) = wait_for(lambda: _finished_turns(voice.chat_id), message="the turn")
    wait_for(lambda: graph.sent_to(CUSTOMER), message="the reply")
    # one turn over both: the timer started when the transcript was ready, so the text that
    # arrived meanwhile did not get an answer of its own without the voice note
    assert (turn.first_message_id, turn.last_message_id) == (voice.pk, text.pk)
    assert len(_finished_turns(voice.chat_id)) == 1
    assert len(graph.sent_to(CUSTOMER)) == 1


def test_noisy_voice_note_makes_the_assistant_ask_to_repeat(
    stack: str, graph: GraphApiEmulator, audio: dict[str, bytes]
) -> None:
    channel = _channel(graph)

    _send_voice(graph, channel, audio["noisy"], "880003")

    voice = _settled(_voice(channel))
    assert voice.transcript_status == "done"
    assert voice.transcript_confidence is not None
    assert voice.transcript_confidence < channel.voice_confidence_threshold
    (turn,) = wait_for(lambda: _finished_turns(voice.chat_id), message="the turn")
    assert (turn.outcome, turn.reason) == (Turn.Outcome.CLARIFIED, "voice_unclear")
    (reply,) = wait_for(lambda: graph.sent_to(CUSTOMER), message="the clarifying question")
    assert reply.text == replies.text("clarify.voice", "en")


def test_corrupt_voice_note_goes_to_a_human_with_a_note_and_the_audio(
    stack: str, graph: GraphApiEmulator
) -> None:
    channel = _channel(graph)
    garbage = b"OggS" + bytes(range(256)) * 20

    _send_voice(graph, channel, garbage, "880004")

    voice = _settled(_voice(channel))
    assert voice.transcript_status == "failed"
    with voice.media_file.open("rb") as f:
        assert f.read() == garbage  # the audio is attached for the manager to try
    note = wait_for(lambda: Message.objects.filter(chat_id=voice.chat_id, kind="note").first())
    assert "could not be read" in note.text
    assert f"/inbox/media/{voice.pk}/" in note.text
    assert note.payload["voice_message_id"] == voice.pk
    handoff = wait_for(lambda: Handoff.objects.filter(chat_id=voice.chat_id).first())
    assert handoff.reason == "voice_failed"
    assert handoff.details["voice_message_id"] == voice.pk
    assert Chat.objects.get(pk=voice.chat_id).owner == Owner.PENDING_HUMAN
    (notice,) = wait_for(lambda: graph.sent_to(CUSTOMER), message="the customer's notice")
    assert notice.text == replies.handoff_message("voice_failed", "en")
    assert not Turn.objects.filter(chat_id=voice.chat_id).exists()  # no bot answer to nothing


def test_too_long_voice_note_goes_to_a_human(
    stack: str, graph: GraphApiEmulator, audio: dict[str, bytes]
) -> None:
    channel = _channel(graph)

    _send_voice(graph, channel, audio["too_long"], "880005")

    voice = _settled(_voice(channel))
    assert voice.transcript_status == "failed"
    assert voice.payload["transcript_error"] == "too_long"
    note = wait_for(lambda: Message.objects.filter(chat_id=voice.chat_id, kind="note").first())
    assert f"longer than {MAX_SECONDS} s" in note.text
    handoff = wait_for(lambda: Handoff.objects.filter(chat_id=voice.chat_id).first())
    assert handoff.reason == "voice_failed"
    wait_for(lambda: graph.sent_to(CUSTOMER), message="the customer's notice")


def test_media_the_platform_no_longer_has_goes_to_a_human(
    stack: str, graph: GraphApiEmulator
) -> None:
    channel = _channel(graph)

    _send_voice(graph, channel, b"", "880006", stored=False)  # the Graph API answers 400 #100

    voice = _settled(_voice(channel))
    assert voice.transcript_status == "failed"
    assert not voice.media_file
    note = wait_for(lambda: Message.objects.filter(chat_id=voice.chat_id, kind="note").first())
    assert "could not be downloaded" in note.text
    assert "/inbox/media/" not in note.text  # nothing to listen to
    wait_for(lambda: Handoff.objects.filter(chat_id=voice.chat_id, reason="voice_failed").exists())
    wait_for(lambda: graph.sent_to(CUSTOMER), message="the customer's notice")


def test_a_transcribed_note_is_not_transcribed_again(
    stack: str, graph: GraphApiEmulator, audio: dict[str, bytes]
) -> None:
    channel = _channel(graph)
    _send_voice(graph, channel, audio["clean"], "880007")
    voice = _settled(_voice(channel))
    before = (voice.transcript, voice.transcript_confidence, voice.media_file.name)

    outcome = voice_notes.transcribe_message(voice.pk)  # a redelivered task

    assert outcome == "already_done"
    voice.refresh_from_db()
    assert (voice.transcript, voice.transcript_confidence, voice.media_file.name) == before
    assert Message.objects.filter(chat_id=voice.chat_id, kind="note").count() == 0
