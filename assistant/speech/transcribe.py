"""Speech-to-text for voice notes: one interface, two backends, one confidence rule.

`transcribe(audio, language=…, prompt_words=…) -> Transcript` decodes any customer audio
(`assistant.speech.audio`), then asks the backend chosen by `SPEECH_BACKEND`:

- ``embedded`` (default): faster-whisper on the CPU with Whisper weights shipped inside pip
  packages (`assistant.speech.embedded`); nothing is downloaded at run time.
- ``openai``: an OpenAI-compatible ``/v1/audio/transcriptions`` server such as vLLM
  (`assistant.speech.openai_server`).

The interface, the transcript's shape and the one confidence rule every backend's transcript
gets are in `assistant.speech.backend`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from django.conf import settings

from assistant import language as languages
from assistant.speech.audio import (
    AudioError,
    AudioSource,
    AudioTooLong,
    AudioUnreadable,
    Pcm,
    decode,
)
from assistant.speech.backend import (
    Segment,
    SpeechBackend,
    SpeechBackendError,
    Transcript,
    Word,
    make_segment,
    make_transcript,
    segment_confidence,
)
from assistant.speech.embedded import EmbeddedWhisper
from assistant.speech.openai_server import OpenAICompatibleSpeech

log = logging.getLogger(__name__)

__all__ = [
    "AudioError",
    "AudioInput",
    "AudioTooLong",
    "AudioUnreadable",
    "Segment",
    "SpeechBackendError",
    "Transcript",
    "Word",
    "make_segment",
    "make_transcript",
    "segment_confidence",
    "transcribe",
]

AudioInput = AudioSource | Pcm

# Whisper's decoder takes at most 223 prompt tokens; this many characters stays below that for
# Latin and Cyrillic catalogue words alike.
PROMPT_MAX_CHARS = 400


def transcribe(
    audio: AudioInput, *, language: str | None = None, prompt_words: Sequence[str] = ()
) -> Transcript:
    """Transcribe a voice note. `language` is the channel's (blank or None: detect);
    `prompt_words` are catalogue product names and cities the model should expect.

    Raises `AudioTooLong` / `AudioUnreadable` (the audio's fault, permanent) and
    `SpeechBackendError` (the backend's; see `.permanent`)."""
    pcm = audio if isinstance(audio, Pcm) else decode(audio, max_seconds=max_seconds())
    if pcm.duration_s > max_seconds() + 0.5:
        raise AudioTooLong(pcm.duration_s, max_seconds())
    backend = get_backend()
    started = time.monotonic()
    result = backend.transcribe(
        pcm, language=languages.speech_code(language), prompt=build_prompt(prompt_words)
    )
    log.info(
        "speech.transcribed",
        extra={
            "backend": backend.name,
            "audio_seconds": round(pcm.duration_s, 2),
            "elapsed_seconds": round(time.monotonic() - started, 2),
            "confidence": round(result.confidence, 3),
            "language": result.language,
        },
    )
    return result


def max_seconds() -> float:
    return float(settings.SPEECH_MAX_SECONDS)


def get_backend() -> SpeechBackend:
    """The configured backend. Cheap to build: the embedded one keeps its model in a
    per-process cache (`assistant.speech.embedded.load_model`)."""
    name = settings.SPEECH_BACKEND or "embedded"
    if name == "embedded":
        return EmbeddedWhisper.from_settings()
    if name == "openai":
        return OpenAICompatibleSpeech.from_settings()
    raise SpeechBackendError(
        f"SPEECH_BACKEND must be 'embedded' or 'openai', not {name!r}.", permanent=True
    )


def build_prompt(words: Sequence[str]) -> str:
    """Catalogue words as a comma-separated prompt: distinct, in the caller's order (most
    important first), cut at whole words to fit the decoder's prompt budget."""
    seen: set[str] = set()
    kept: list[str] = []
    length = 0
    for raw in words:
        word = " ".join(str(raw).split())
        if not word or word.casefold() in seen:
            continue
        if length + len(word) + 2 > PROMPT_MAX_CHARS:
            break
        seen.add(word.casefold())
        kept.append(word)
        length += len(word) + 2
    return ", ".join(kept) + "." if kept else ""
