"""The speech backend interface, the transcript it returns, and the confidence rule.

Confidence comes only from the model's own signals. For each segment

    S = exp(avg_logprob) · (1 − no_speech_prob)     the decoder's mean token probability,
                                                    discounted by its belief there is no speech
    W = mean of the segment's word probabilities     how sure it is of each word it wrote
    segment confidence = √(S · W)                    (S alone or W alone when a server sends
                                                     only one of them)

and the transcript's confidence is the duration-weighted mean over its segments (0 when the
audio holds no speech). The geometric mean lets either signal pull the score down: noise
lowers the decoder's sequence probability, a single misheard catalogue word lowers W.

A segment Whisper itself would call a failed decode (gzip compression ratio above 2.4: text
looping on itself, "very, very, very, …") scores 0, however sure of each word the decoder was.

Measured with the embedded base model on six espeak-ng sentences sent as OGG/Opus voice notes,
with the catalogue prompt (`bench/speech_accuracy.py` reproduces it): clean speech scored
0.67–0.85 (mean WER 0.02; 0.20 without the prompt); under white or babble noise it scored
0.37–0.78 at 10 dB SNR (WER 0.35–0.39), 0.29–0.73 at 5 dB (WER 0.37–0.61) and 0.00–0.64 at
0 dB (WER 0.56 to 3, invented text). Correlation of the score with WER over all 42 notes:
−0.81 (tiny.en: −0.63). The channel's default clarify threshold of 0.6 thus passes every clean
note and stops most noisy ones. Word probabilities (clean, 10 and 5 dB): right words median
0.87, wrong words median 0.37; flagging words under `SPEECH_LOW_WORD_PROBABILITY` = 0.5
marks 61 % of the wrong words and 18 % of the right ones (0.4: 53 % / 14 %; 0.6: 68 % / 22 %),
which is what a "listen to this bit" highlight needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.conf import settings

from assistant.speech.audio import Pcm
from inbox.platform.http import Permanent, Transient

# Whisper's own test for a failed decode: text that gzip-compresses this well is a loop
# ("very, very, very, …"), whatever probability the decoder gave it.
REPETITION_COMPRESSION_RATIO = 2.4


@dataclass(frozen=True)
class Word:
    start: float
    end: float
    word: str
    probability: float | None


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str
    avg_logprob: float | None
    no_speech_prob: float | None
    confidence: float
    words: tuple[Word, ...] = ()
    compression_ratio: float | None = None


@dataclass(frozen=True)
class Transcript:
    text: str
    language: str
    confidence: float
    duration_s: float
    segments: tuple[Segment, ...] = field(default_factory=tuple)

    def segments_json(self, low_word_probability: float | None = None) -> list[dict[str, Any]]:
        """The segments as stored on `Message.transcript_segments`; each word carries
        ``low: true`` when the model gave it less than `low_word_probability`, or when its
        segment is a loop (all of it is suspect, however sure the model was of each word)."""
        threshold = (
            settings.SPEECH_LOW_WORD_PROBABILITY
            if low_word_probability is None
            else low_word_probability
        )
        return [
            {
                "start": round(s.start, 2),
                "end": round(s.end, 2),
                "text": s.text,
                "avg_logprob": _round(s.avg_logprob),
                "no_speech_prob": _round(s.no_speech_prob),
                "compression_ratio": _round(s.compression_ratio),
                "confidence": round(s.confidence, 3),
                "words": [
                    {
                        "start": round(w.start, 2),
                        "end": round(w.end, 2),
                        "word": w.word,
                        "probability": _round(w.probability),
                        "low": _looping(s.compression_ratio)
                        or (w.probability is not None and w.probability < threshold),
                    }
                    for w in s.words
                ],
            }
            for s in self.segments
        ]


class SpeechBackendError(Exception):
    """The speech backend failed. `permanent` says whether trying again can help:
    `SpeechBackendError(message, permanent=…)` gives a `PermanentSpeechError` or a
    `TransientSpeechError`, the platform's `Permanent` / `Transient` failures."""

    permanent: bool

    def __new__(cls, message: str, *args: Any, permanent: bool = False, **kwargs: Any) -> Any:
        if cls is SpeechBackendError:
            cls = PermanentSpeechError if permanent else TransientSpeechError
        return super().__new__(cls, message)

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


class TransientSpeechError(SpeechBackendError, Transient):
    pass


class PermanentSpeechError(SpeechBackendError, Permanent):
    pass


class SpeechBackend(Protocol):
    name: str

    def transcribe(self, pcm: Pcm, *, language: str | None, prompt: str) -> Transcript: ...


def segment_confidence(
    avg_logprob: float | None,
    no_speech_prob: float | None,
    word_probabilities: Sequence[float],
    compression_ratio: float | None = None,
) -> float:
    """√(S·W) of the module docstring, from whichever signals the backend returned; 0 for a
    decode Whisper itself counts as failed (text repeating itself)."""
    if _looping(compression_ratio):
        return 0.0
    sequence = None
    if avg_logprob is not None:
        sequence = math.exp(min(avg_logprob, 0.0)) * (1.0 - _clamp(no_speech_prob or 0.0))
    words = sum(word_probabilities) / len(word_probabilities) if word_probabilities else None
    if sequence is not None and words is not None:
        return _clamp(math.sqrt(sequence * _clamp(words)))
    if sequence is not None:
        return _clamp(sequence)
    if words is not None:
        return _clamp(words)
    return 0.0


def transcript_confidence(segments: Sequence[Segment]) -> float:
    """Duration-weighted mean of segment confidences; 0 without segments (nothing heard)."""
    weighted = 0.0
    total = 0.0
    for segment in segments:
        weight = max(segment.end - segment.start, 0.01)
        weighted += weight * segment.confidence
        total += weight
    return _clamp(weighted / total) if total else 0.0


def make_segment(
    *,
    start: float,
    end: float,
    text: str,
    avg_logprob: float | None,
    no_speech_prob: float | None,
    words: Sequence[Word],
    compression_ratio: float | None = None,
) -> Segment:
    probabilities = [w.probability for w in words if w.probability is not None]
    return Segment(
        start=start,
        end=end,
        text=text.strip(),
        avg_logprob=avg_logprob,
        no_speech_prob=no_speech_prob,
        confidence=segment_confidence(
            avg_logprob, no_speech_prob, probabilities, compression_ratio
        ),
        words=tuple(words),
        compression_ratio=compression_ratio,
    )


def make_transcript(
    segments: Sequence[Segment], *, language: str, duration_s: float, text: str | None = None
) -> Transcript:
    joined = " ".join(s.text for s in segments if s.text) if text is None else text.strip()
    return Transcript(
        text=joined,
        language=language,
        confidence=transcript_confidence(segments),
        duration_s=duration_s,
        segments=tuple(segments),
    )


def _looping(compression_ratio: float | None) -> bool:
    return compression_ratio is not None and compression_ratio > REPETITION_COMPRESSION_RATIO


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
