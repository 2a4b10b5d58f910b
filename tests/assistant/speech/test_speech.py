"""The embedded speech backend on real speech: espeak-ng sentences sent as WhatsApp voice notes.

Thresholds come from `bench/speech_accuracy.py` (base model, catalogue prompt, 2 CPU threads):
clean sentences transcribed with mean WER 0.02 (worst single sentence 0.12, one word in eight)
and confidence 0.67-0.85; the same sentences under babble noise at 0 dB SNR scored 0.00-0.44.
The tests allow 0.25 WER per sentence (two words in eight: room for CPU-dependent int8
rounding, while tiny.en's 0.12 mean and 0.25-0.75 worst would still be caught on these) and
require clean speech at or above the channel's default clarify threshold (0.6) and noisy
speech below it and at least 0.2 lower than the same sentence spoken clean.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from django.test import override_settings

from assistant import language
from assistant.speech import transcribe as speech
from assistant.speech.audio import Pcm, decode
from assistant.speech.embedded import assemble_base, model_folder
from tests.speech_samples import (
    CATALOGUE_WORDS,
    SENTENCES,
    babble_noise,
    ogg_opus,
    silence,
    speak,
    with_noise,
    word_error_rate,
)

CLARIFY_THRESHOLD = 0.6  # Channel.voice_confidence_threshold's default
MAX_WER = 0.25


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("speech")


@pytest.fixture(scope="module")
def voice_notes(workdir: Path) -> dict[int, bytes]:
    """The test sentences as OGG/Opus voice notes, made by espeak-ng and ffmpeg."""
    return {i: ogg_opus(speak(text, workdir, f"s{i}")) for i, text in enumerate(SENTENCES)}


@pytest.fixture(scope="module")
def babble(workdir: Path, voice_notes: dict[int, bytes]) -> np.ndarray:
    return babble_noise(16_000 * 10, workdir)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_a_voice_note_is_transcribed_with_catalogue_words(
    voice_notes: dict[int, bytes], index: int
) -> None:
    result = speech.transcribe(voice_notes[index], language="en", prompt_words=CATALOGUE_WORDS)

    assert word_error_rate(SENTENCES[index], result.text) <= MAX_WER, result.text
    assert result.language == "en"
    assert result.confidence >= CLARIFY_THRESHOLD
    assert result.duration_s == pytest.approx(2.4, abs=0.6)
    # segments carry the model's own signals, and every word its probability and timing
    words = [w for s in result.segments for w in s.words]
    assert len(words) == len(result.text.split())
    assert all(0.0 <= (w.probability or 0) <= 1.0 and w.end >= w.start for w in words)
    assert all(s.avg_logprob is not None and s.no_speech_prob is not None for s in result.segments)


def test_catalogue_words_are_spelled_as_in_the_price_list(voice_notes: dict[int, bytes]) -> None:
    result = speech.transcribe(voice_notes[5], language="en", prompt_words=CATALOGUE_WORDS)

    assert "Karaganda" in result.text


def test_noisy_voice_note_gets_clearly_lower_confidence(
    voice_notes: dict[int, bytes], babble: np.ndarray
) -> None:
    clean = decode(voice_notes[4], max_seconds=60)
    noisy = with_noise(clean, babble, snr_db=0)

    clean_result = speech.transcribe(clean, language="en", prompt_words=CATALOGUE_WORDS)
    noisy_result = speech.transcribe(noisy, language="en", prompt_words=CATALOGUE_WORDS)

    assert clean_result.confidence >= CLARIFY_THRESHOLD
    assert noisy_result.confidence < CLARIFY_THRESHOLD
    assert noisy_result.confidence <= clean_result.confidence - 0.2
    # the dashboard highlights the words the model doubted: none in the clean note, some here
    clean_words = [w for s in clean_result.segments_json() for w in s["words"]]
    noisy_words = [w for s in noisy_result.segments_json() for w in s["words"]]
    assert not [w["word"] for w in clean_words if w["low"]]
    assert any(w["low"] for w in noisy_words)
    assert all(w["low"] == (w["probability"] < 0.5) for w in noisy_words)


def test_speech_after_the_first_30_seconds_keeps_its_place(
    voice_notes: dict[int, bytes],
) -> None:
    first = decode(voice_notes[0], max_seconds=60)
    second = decode(voice_notes[4], max_seconds=60)
    long_note = Pcm(np.concatenate([first.samples, silence(29).samples, second.samples]))

    result = speech.transcribe(long_note, language="en", prompt_words=CATALOGUE_WORDS)

    assert word_error_rate(f"{SENTENCES[0]} {SENTENCES[4]}", result.text) <= MAX_WER
    tomorrow = next(w for s in result.segments for w in s.words if "tomorrow" in w.word.lower())
    assert tomorrow.start >= 31.0  # timestamps point into the original audio, for playback
    assert result.duration_s == pytest.approx(long_note.duration_s)


def test_silence_is_an_empty_transcript_with_no_confidence() -> None:
    result = speech.transcribe(silence(3.0), language="en", prompt_words=CATALOGUE_WORDS)

    assert result.text == ""
    assert result.confidence == 0.0
    assert result.segments == ()


def test_too_long_and_unreadable_audio_are_refused_before_the_model(
    voice_notes: dict[int, bytes],
) -> None:
    with override_settings(SPEECH_MAX_SECONDS=1), pytest.raises(speech.AudioTooLong):
        speech.transcribe(voice_notes[0], language="en")
    with pytest.raises(speech.AudioUnreadable):
        speech.transcribe(b"OggS" + b"\x00" * 300, language="en")


# --- the model folder: assembled once from its two wheels, verified, reused ---------------


def test_base_model_is_assembled_once_and_reused(tmp_path: Path) -> None:
    folder = assemble_base(tmp_path)
    model_bin = folder / "model.bin"
    first = model_bin.stat()

    again = assemble_base(tmp_path)

    assert again == folder
    assert model_bin.stat().st_ino == first.st_ino  # not rebuilt
    assert {p.name for p in folder.iterdir()} == {
        "config.json", "tokenizer.json", "vocabulary.txt", "model.bin", "manifest.json"
    }  # fmt: skip


def test_a_damaged_model_folder_is_rebuilt(tmp_path: Path) -> None:
    folder = assemble_base(tmp_path)
    size = (folder / "model.bin").stat().st_size
    with (folder / "model.bin").open("r+b") as f:
        f.truncate(size // 2)  # a disk filled up half-way through an earlier copy

    rebuilt = assemble_base(tmp_path)

    assert (rebuilt / "model.bin").stat().st_size == size
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".whisper-base-")]


def test_english_tiny_ships_ready_to_load() -> None:
    folder = model_folder("tiny.en")

    assert (folder / "model.bin").is_file()
    assert (folder / "tokenizer.json").is_file()


@pytest.mark.parametrize("name", ["large-v3", "Systran/faster-whisper-small", "/no/such/folder"])
def test_a_model_that_is_not_local_is_refused_not_downloaded(name: str) -> None:
    with pytest.raises(speech.SpeechBackendError) as error:
        model_folder(name)

    assert error.value.permanent
    assert "SPEECH_MODEL" in str(error.value)


def test_unknown_backend_is_a_configuration_error(voice_notes: dict[int, bytes]) -> None:
    with override_settings(SPEECH_BACKEND="cloud"), pytest.raises(speech.SpeechBackendError):
        speech.transcribe(voice_notes[0])


# --- pure rules ---------------------------------------------------------------------------


def test_prompt_keeps_order_drops_repeats_and_fits_the_budget() -> None:
    assert speech.build_prompt(["Oak table", "Almaty", "oak  table", " ", "Astana"]) == (
        "Oak table, Almaty, Astana."
    )
    long_prompt = speech.build_prompt([f"product number {i}" for i in range(200)])
    assert len(long_prompt) <= speech.PROMPT_MAX_CHARS
    assert long_prompt.startswith("product number 0, product number 1,")
    assert speech.build_prompt([]) == ""


@pytest.mark.parametrize(
    ("given", "expected"),
    [("en", "en"), ("en-US", "en"), ("RU_ru", "ru"), ("", None), (None, None), ("  ", None)],
)
def test_channel_language_is_normalised(given: str | None, expected: str | None) -> None:
    assert language.speech_code(given) == expected


def test_confidence_combines_the_models_signals() -> None:
    sure = speech.segment_confidence(-0.1, 0.01, [0.95, 0.9, 0.99])
    doubtful_words = speech.segment_confidence(-0.1, 0.01, [0.95, 0.1, 0.99])
    probably_noise = speech.segment_confidence(-0.1, 0.9, [0.95, 0.9, 0.99])
    looping = speech.segment_confidence(-0.1, 0.01, [0.95, 0.9, 0.99], compression_ratio=3.1)

    assert 0.85 < sure <= 1.0
    assert doubtful_words < sure - 0.1
    assert probably_noise < 0.35
    assert looping == 0.0
    # a server that sends only some signals still gets a score from those
    assert speech.segment_confidence(None, None, [0.8]) == pytest.approx(0.8)
    assert speech.segment_confidence(-0.5, None, []) == pytest.approx(np.exp(-0.5))
    assert speech.segment_confidence(None, None, []) == 0.0


def test_transcript_confidence_weighs_segments_by_duration() -> None:
    long_sure = speech.make_segment(
        start=0, end=9, text="a", avg_logprob=-0.05, no_speech_prob=0.0, words=[]
    )
    short_doubtful = speech.make_segment(
        start=9, end=10, text="b", avg_logprob=-2.0, no_speech_prob=0.5, words=[]
    )

    result = speech.make_transcript([long_sure, short_doubtful], language="en", duration_s=10)

    assert result.text == "a b"
    expected = (9 * long_sure.confidence + 1 * short_doubtful.confidence) / 10
    assert result.confidence == pytest.approx(expected)
