"""The OpenAI-compatible speech backend against an emulated server over real HTTP: what it
sends, how it reads vLLM's and OpenAI's answers, and how each failure is classified."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.test import override_settings

from assistant.speech import transcribe as speech
from assistant.speech.openai_server import language_code
from inbox.platform.http import Permanent, Transient
from tests.emulators.openai_audio import (
    SpeechEmulator,
    Step,
    refused_base_url,
    verbose_body,
    wav_format,
)
from tests.speech_samples import encode, tone

API_KEY = "sk-test-speech"


@pytest.fixture
def emu() -> Iterator[SpeechEmulator]:
    with SpeechEmulator(api_key=API_KEY, models=("whisper-large-v3",)) as server:
        with override_settings(
            SPEECH_BACKEND="openai",
            SPEECH_BASE_URL=server.base_url,
            SPEECH_MODEL="whisper-large-v3",
            SPEECH_API_KEY=API_KEY,
            SPEECH_TIMEOUT_SECONDS=2,
        ):
            yield server


@pytest.fixture(scope="module")
def voice_note() -> bytes:
    return encode(tone(2.0), "ogg_opus")


def test_sends_the_note_as_wav_with_prompt_language_and_verbose_json(
    emu: SpeechEmulator, voice_note: bytes
) -> None:
    emu.script(Step.verbose(verbose_body("two chairs to Almaty", 0.9)))

    speech.transcribe(voice_note, language="ru-RU", prompt_words=["chairs", "Almaty"])

    sent = emu.requests[-1]
    assert sent.path == "/v1/audio/transcriptions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert wav_format(sent.file) == (1, 16000, 16)
    assert sent.file_type == "audio/wav"
    assert sent.one("model") == "whisper-large-v3"
    assert sent.one("response_format") == "verbose_json"
    assert sent.fields["timestamp_granularities[]"] == ["word", "segment"]
    assert sent.one("language") == "ru"
    assert sent.one("prompt") == "chairs, Almaty."
    assert sent.one("temperature") == "0"


def test_reads_segments_and_word_probabilities_into_a_transcript(
    emu: SpeechEmulator, voice_note: bytes
) -> None:
    emu.script(
        Step.verbose(
            verbose_body("two chairs to Almaty", [0.95, 0.12, 0.9, 0.97], avg_logprob=-0.2)
        )
    )

    result = speech.transcribe(voice_note, language="en", prompt_words=[])

    assert result.text == "two chairs to Almaty"
    assert result.language == "en"
    assert [w.word for w in result.segments[0].words] == ["two", "chairs", "to", "Almaty"]
    assert 0.5 < result.confidence < 0.85  # one doubtful word pulls it down
    low = [w["word"] for s in result.segments_json() for w in s["words"] if w["low"]]
    assert low == ["chairs"]


def test_reads_openais_layout_top_level_words_and_language_names(
    emu: SpeechEmulator, voice_note: bytes
) -> None:
    emu.script(Step.verbose(verbose_body("hello there", layout="openai", language="ru")))

    result = speech.transcribe(voice_note, language=None)

    assert result.language == "ru"
    assert [w.word for w in result.segments[0].words] == ["hello", "there"]
    assert all(w.probability is None for w in result.segments[0].words)
    # without word probabilities the score comes from the segment's own signals
    assert result.confidence == pytest.approx(speech.segment_confidence(-0.2, 0.01, []))


def test_doubtful_answer_scores_below_a_sure_one(emu: SpeechEmulator, voice_note: bytes) -> None:
    emu.script(
        Step.verbose(verbose_body("two chairs", 0.97, avg_logprob=-0.1, no_speech_prob=0.01)),
        Step.verbose(verbose_body("two chairs", 0.4, avg_logprob=-0.9, no_speech_prob=0.4)),
    )

    sure = speech.transcribe(voice_note)
    doubtful = speech.transcribe(voice_note)

    assert sure.confidence > 0.85
    assert doubtful.confidence < 0.35


def test_a_plain_json_answer_has_no_confidence(emu: SpeechEmulator, voice_note: bytes) -> None:
    emu.script(Step(200, b'{"text": "two chairs"}'))

    result = speech.transcribe(voice_note)

    assert result.text == "two chairs"
    assert result.confidence == 0.0  # never acted on as if the model were sure


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_server_errors_and_rate_limits_are_transient(
    emu: SpeechEmulator, voice_note: bytes, status: int
) -> None:
    emu.script(Step.server_error(status, "engine overloaded"))

    with pytest.raises(speech.SpeechBackendError) as error:
        speech.transcribe(voice_note)

    assert not error.value.permanent
    assert isinstance(error.value, Transient)
    assert not isinstance(error.value, Permanent)
    assert f"HTTP {status}" in str(error.value)
    assert "engine overloaded" in str(error.value)


def test_a_slow_server_times_out_as_transient(emu: SpeechEmulator, voice_note: bytes) -> None:
    emu.script(Step.slow(10))

    started = time.monotonic()
    with pytest.raises(speech.SpeechBackendError) as error:
        speech.transcribe(voice_note)

    assert not error.value.permanent
    assert "did not answer within 2 s" in str(error.value)
    assert time.monotonic() - started < 8  # gave up at the timeout, did not wait it out


@pytest.mark.parametrize("step", [Step.invalid_json(), Step(200, b"<html>Bad Gateway</html>")])
def test_an_answer_that_is_not_a_transcription_is_transient(
    emu: SpeechEmulator, voice_note: bytes, step: Step
) -> None:
    emu.script(step)

    with pytest.raises(speech.SpeechBackendError) as error:
        speech.transcribe(voice_note)

    assert not error.value.permanent


def test_a_dropped_connection_is_transient(emu: SpeechEmulator, voice_note: bytes) -> None:
    emu.script(Step.dropped())

    with pytest.raises(speech.SpeechBackendError) as error:
        speech.transcribe(voice_note)

    assert not error.value.permanent


def test_a_server_that_is_down_is_transient(voice_note: bytes) -> None:
    with (
        override_settings(SPEECH_BACKEND="openai", SPEECH_BASE_URL=refused_base_url()),
        pytest.raises(speech.SpeechBackendError) as error,
    ):
        speech.transcribe(voice_note)

    assert not error.value.permanent
    assert "could not be reached" in str(error.value)


def test_a_wrong_key_is_permanent_and_says_which_setting(
    emu: SpeechEmulator, voice_note: bytes
) -> None:
    with override_settings(SPEECH_API_KEY="wrong"), pytest.raises(speech.SpeechBackendError) as e:
        speech.transcribe(voice_note)

    assert e.value.permanent
    assert isinstance(e.value, Permanent)
    assert not isinstance(e.value, Transient)
    assert "SPEECH_API_KEY" in str(e.value)
    assert "wrong" not in str(e.value)  # the key is never echoed


def test_an_unknown_model_is_permanent_with_the_servers_reason(
    emu: SpeechEmulator, voice_note: bytes
) -> None:
    with override_settings(SPEECH_MODEL="whisper-9"), pytest.raises(speech.SpeechBackendError) as e:
        speech.transcribe(voice_note)

    assert e.value.permanent
    assert "HTTP 404" in str(e.value)
    assert "whisper-9" in str(e.value)


def test_too_long_audio_never_reaches_the_server(emu: SpeechEmulator) -> None:
    with override_settings(SPEECH_MAX_SECONDS=5), pytest.raises(speech.AudioTooLong):
        speech.transcribe(encode(tone(8.0), "mp3"))

    assert emu.requests == []


def test_missing_base_url_is_a_configuration_error(voice_note: bytes) -> None:
    with (
        override_settings(SPEECH_BACKEND="openai", SPEECH_BASE_URL=""),
        pytest.raises(speech.SpeechBackendError, match="SPEECH_BASE_URL") as error,
    ):
        speech.transcribe(voice_note)

    assert error.value.permanent


@pytest.mark.parametrize(
    ("given", "code"),
    [("en", "en"), ("English", "en"), ("russian", "ru"), ("haitian creole", "ht"), ("xx", "")],
)
def test_language_names_become_codes(given: str, code: str) -> None:
    assert language_code(given) == code
