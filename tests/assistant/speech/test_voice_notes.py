"""How a voice note's transient failures are classified: retry later while attempts remain,
then a note for the managers instead of a silent drop. (The happy path and the permanent
failures run through real processes in test_voice_pipeline.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.files.base import ContentFile
from django.test import override_settings

from assistant.speech import voice_notes
from inbox.conversations.models import Channel, Chat, Message, Owner
from tests import factories
from tests.emulators.openai_audio import SpeechEmulator, Step, refused_base_url
from tests.speech_samples import encode, tone

pytestmark = pytest.mark.django_db


def _voice(chat: Chat, **fields: object) -> Message:
    return factories.customer_message(
        chat, "", kind=Message.Kind.VOICE, transcript_status=Message.TranscriptStatus.PENDING,
        media_mime="audio/ogg", **fields,
    )  # fmt: skip


@pytest.fixture
def human_chat() -> Chat:
    """A chat a manager already owns: a failure needs a note, not a handoff."""
    chat = factories.chat(factories.channel(kind=Channel.Kind.CLOUD_API))
    Chat.objects.filter(pk=chat.pk).update(owner=Owner.HUMAN)
    chat.refresh_from_db()
    return chat


@pytest.fixture
def stored_voice(human_chat: Chat) -> Iterator[Message]:
    message = _voice(human_chat)
    message.media_file.save(f"voice-{message.pk}.ogg", ContentFile(encode(tone(1.0), "ogg_opus")))
    yield message
    message.media_file.delete(save=False)


def _notes(chat: Chat) -> list[Message]:
    return list(Message.objects.filter(chat=chat, kind=Message.Kind.NOTE))


def test_an_unreachable_platform_is_retried_then_noted(human_chat: Chat) -> None:
    message = _voice(human_chat, media_ref="1234567890")

    with override_settings(WHATSAPP_GRAPH_URL=refused_base_url()):
        with pytest.raises(voice_notes.TryLater):
            voice_notes.transcribe_message(message.pk)
        message.refresh_from_db()
        assert message.transcript_status == Message.TranscriptStatus.PENDING
        assert _notes(human_chat) == []

        outcome = voice_notes.transcribe_message(message.pk, last_attempt=True)

    assert outcome == "failed"
    message.refresh_from_db()
    assert message.transcript_status == Message.TranscriptStatus.FAILED
    (note,) = _notes(human_chat)
    assert "could not be downloaded" in note.text
    human_chat.refresh_from_db()
    assert human_chat.owner == Owner.HUMAN  # already a person's chat: nothing to hand off


def test_a_busy_speech_server_is_retried_then_noted(stored_voice: Message) -> None:
    with (
        SpeechEmulator() as emu,
        override_settings(
            SPEECH_BACKEND="openai", SPEECH_BASE_URL=emu.base_url, SPEECH_TIMEOUT_SECONDS=5
        ),
    ):
        emu.script(Step.server_error(503), Step.server_error(503))
        with pytest.raises(voice_notes.TryLater):
            voice_notes.transcribe_message(stored_voice.pk)

        outcome = voice_notes.transcribe_message(stored_voice.pk, last_attempt=True)

    assert outcome == "failed"
    (note,) = _notes(stored_voice.chat)
    assert "speech service failed" in note.text
    assert f"/inbox/media/{stored_voice.pk}/" in note.text  # the manager can still listen


def test_a_refused_speech_request_is_not_retried(stored_voice: Message) -> None:
    with override_settings(SPEECH_BACKEND="openai", SPEECH_BASE_URL=refused_base_url()):
        with pytest.raises(voice_notes.TryLater):
            voice_notes.transcribe_message(stored_voice.pk)  # down: transient
    with (
        SpeechEmulator(api_key="right") as emu,
        override_settings(
            SPEECH_BACKEND="openai", SPEECH_BASE_URL=emu.base_url, SPEECH_API_KEY="wrong"
        ),
    ):
        outcome = voice_notes.transcribe_message(stored_voice.pk)  # bad key: permanent

    assert outcome == "failed"
    assert "SPEECH_API_KEY" in _notes(stored_voice.chat)[0].text


def test_a_failed_note_is_noted_once(stored_voice: Message) -> None:
    failure = voice_notes.Failure("unreadable", "broken file")

    first = voice_notes.fail(stored_voice, failure)
    second = voice_notes.fail(stored_voice, failure)  # a redelivered task

    assert (first, second) == ("failed", "already_done")
    assert len(_notes(stored_voice.chat)) == 1


def test_prompt_words_come_from_the_channels_price_list() -> None:
    from assistant.knowledge.price_import import apply_price_list, parse_price_file

    channel = factories.channel()
    csv = b"Name,Price\nOak dining table,120000\nBlue sofa,310000\n"
    apply_price_list(parse_price_file(csv, "p.csv", "KZT"), channel.business)

    assert voice_notes.prompt_words(channel.pk) == ["Oak dining table", "Blue sofa"]
