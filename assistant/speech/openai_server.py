"""The production speech backend: an OpenAI-compatible server's
``POST {SPEECH_BASE_URL}/audio/transcriptions`` (vLLM serves Whisper-class models this way, and
so do other servers).

The audio goes up as 16 kHz mono 16-bit WAV, decoded here first: every server reads WAV, and
too-long or broken files are refused before they cost a request. We ask for
``response_format=verbose_json`` with word and segment timestamps; the segments' `avg_logprob`
and `no_speech_prob` and the words' `probability` feed the same confidence rule as the
embedded backend. Servers differ in what they return: words may sit inside segments (vLLM,
faster-whisper servers) or at the top level without probabilities (OpenAI); language may be a
code or an English name. A server that returns no model signals at all (plain ``json``)
yields confidence 0, so such a transcript is never acted on without a human or a clarifying
question.

Errors: connection failures, timeouts, 408/429/5xx and unparseable bodies are transient (the
task retries); other 4xx are permanent (wrong model name, bad key, file refused). Requests go
through the process's pooled client (`inbox.platform.http`: the speech server is the
operator's URL, not pinned), with SPEECH_TIMEOUT_SECONDS for reading the answer and writing
the audio.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
from django.conf import settings
from pydantic import BaseModel, ConfigDict, ValidationError

from assistant.speech.audio import Pcm
from assistant.speech.backend import (
    Segment,
    SpeechBackendError,
    Transcript,
    Word,
    make_segment,
    make_transcript,
)
from inbox.platform import http

log = logging.getLogger(__name__)

DEFAULT_MODEL = "whisper-1"


class _Word(BaseModel):
    model_config = ConfigDict(extra="ignore")

    word: str
    start: float = 0.0
    end: float = 0.0
    probability: float | None = None


class _Segment(BaseModel):
    model_config = ConfigDict(extra="ignore")

    start: float = 0.0
    end: float = 0.0
    text: str = ""
    avg_logprob: float | None = None
    no_speech_prob: float | None = None
    compression_ratio: float | None = None
    words: list[_Word] | None = None


class _Verbose(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str = ""
    language: str | None = None
    duration: float | None = None
    segments: list[_Segment] | None = None
    words: list[_Word] | None = None


class OpenAICompatibleSpeech:
    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str, timeout: float) -> None:
        if not base_url:
            raise SpeechBackendError(
                "SPEECH_BACKEND=openai needs SPEECH_BASE_URL (e.g. http://vllm:8000/v1).",
                permanent=True,
            )
        self.url = f"{base_url.rstrip('/')}/audio/transcriptions"
        self.model = model or DEFAULT_MODEL
        self.api_key = api_key
        self.timeout = timeout

    @classmethod
    def from_settings(cls) -> OpenAICompatibleSpeech:
        return cls(
            settings.SPEECH_BASE_URL,
            settings.SPEECH_MODEL,
            settings.SPEECH_API_KEY,
            float(settings.SPEECH_TIMEOUT_SECONDS),
        )

    def transcribe(self, pcm: Pcm, *, language: str | None, prompt: str) -> Transcript:
        form: dict[str, str | list[str]] = {
            "model": self.model,
            "response_format": "verbose_json",
            "timestamp_granularities[]": ["word", "segment"],
            "temperature": "0",
        }
        if language:
            form["language"] = language
        if prompt:
            form["prompt"] = prompt
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = http.shared().post(
                self.url,
                data=form,
                files={"file": ("voice.wav", pcm.to_wav(), "audio/wav")},
                headers=headers,
                timeout=http.timeouts(self.timeout),
            )
        except httpx.TimeoutException as exc:
            raise SpeechBackendError(
                f"The speech server did not answer within {self.timeout:g} s.", permanent=False
            ) from exc
        except httpx.HTTPError as exc:
            raise SpeechBackendError(
                f"The speech server could not be reached ({type(exc).__name__}).", permanent=False
            ) from exc
        if response.status_code != 200:
            raise _status_error(response)
        try:
            body = _Verbose.model_validate_json(response.content)
        except ValidationError as exc:
            log.warning("speech.bad_response", extra={"status": response.status_code})
            raise SpeechBackendError(
                "The speech server answered with something that is not a transcription.",
                permanent=False,
            ) from exc
        return to_transcript(body, language=language, duration_s=pcm.duration_s)


def to_transcript(body: _Verbose, *, language: str | None, duration_s: float) -> Transcript:
    loose_words = [_word(w) for w in body.words or []]
    raw_segments = body.segments or []
    segments: list[Segment] = []
    if raw_segments:
        for index, raw in enumerate(raw_segments):
            if raw.words is not None:
                words = [_word(w) for w in raw.words]
            else:
                words = _words_within(loose_words, raw, last=index == len(raw_segments) - 1)
            segments.append(
                make_segment(
                    start=raw.start, end=raw.end, text=raw.text, avg_logprob=raw.avg_logprob,
                    no_speech_prob=raw.no_speech_prob, words=words,
                    compression_ratio=raw.compression_ratio,
                )
            )  # fmt: skip
    elif body.text.strip() and loose_words:
        segments.append(
            make_segment(
                start=loose_words[0].start, end=loose_words[-1].end, text=body.text,
                avg_logprob=None, no_speech_prob=None, words=loose_words,
            )
        )  # fmt: skip
    if body.text.strip() and not segments:
        log.warning("speech.no_confidence_signals", extra={"backend": "openai"})
    return make_transcript(
        segments,
        language=language_code(body.language) or language or "",
        duration_s=body.duration or duration_s,
        text=body.text,
    )


def _word(raw: _Word) -> Word:
    return Word(start=raw.start, end=raw.end, word=raw.word.strip(), probability=raw.probability)


def _words_within(words: list[Word], segment: _Segment, *, last: bool) -> list[Word]:
    """Top-level words (OpenAI's layout) that start inside this segment."""
    inside = [w for w in words if segment.start <= w.start < segment.end]
    return inside + [w for w in words if last and w.start >= segment.end]


def _status_error(response: httpx.Response) -> SpeechBackendError:
    detail = _error_message(response)
    status = response.status_code
    transient = status in (408, 409, 429) or status >= 500
    log.warning("speech.server_error", extra={"status": status, "transient": transient})
    if status in (401, 403):
        return SpeechBackendError(
            f"The speech server refused our credentials (HTTP {status}); check SPEECH_API_KEY.",
            permanent=True,
        )
    return SpeechBackendError(
        f"The speech server answered HTTP {status}" + (f": {detail}" if detail else "."),
        permanent=not transient,
    )


def _error_message(response: httpx.Response) -> str:
    """The server's own error text (OpenAI layout: {"error": {"message": …}}), shortened."""
    try:
        payload: Any = response.json()
    except ValueError:
        return ""
    message = ""
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            message = str(error.get("message") or error.get("detail") or "")
        elif isinstance(error, str):
            message = error
    return " ".join(message.split())[:300]


# Whisper's languages by the English name some servers return instead of the code.
_NAMES = (
    "english:en chinese:zh german:de spanish:es russian:ru korean:ko french:fr japanese:ja "
    "portuguese:pt turkish:tr polish:pl catalan:ca dutch:nl arabic:ar swedish:sv italian:it "
    "indonesian:id hindi:hi finnish:fi vietnamese:vi hebrew:he ukrainian:uk greek:el malay:ms "
    "czech:cs romanian:ro danish:da hungarian:hu tamil:ta norwegian:no thai:th urdu:ur "
    "croatian:hr bulgarian:bg lithuanian:lt latin:la maori:mi malayalam:ml welsh:cy slovak:sk "
    "telugu:te persian:fa latvian:lv bengali:bn serbian:sr azerbaijani:az slovenian:sl "
    "kannada:kn estonian:et macedonian:mk breton:br basque:eu icelandic:is armenian:hy "
    "nepali:ne mongolian:mn bosnian:bs kazakh:kk albanian:sq swahili:sw galician:gl marathi:mr "
    "punjabi:pa sinhala:si khmer:km shona:sn yoruba:yo somali:so afrikaans:af occitan:oc "
    "georgian:ka belarusian:be tajik:tg sindhi:sd gujarati:gu amharic:am yiddish:yi lao:lo "
    "uzbek:uz faroese:fo haitian_creole:ht pashto:ps turkmen:tk nynorsk:nn maltese:mt "
    "sanskrit:sa luxembourgish:lb myanmar:my tibetan:bo tagalog:tl malagasy:mg assamese:as "
    "tatar:tt hawaiian:haw lingala:ln hausa:ha bashkir:ba javanese:jw sundanese:su cantonese:yue"
)
LANGUAGE_CODES = dict(pair.split(":") for pair in _NAMES.split())


def language_code(value: str | None) -> str:
    """'en', 'English', 'haitian creole' → a Whisper language code ('' when unknown)."""
    if not value:
        return ""
    cleaned = value.strip().lower()
    if cleaned in LANGUAGE_CODES.values():
        return cleaned
    return LANGUAGE_CODES.get(cleaned.replace(" ", "_"), "")
