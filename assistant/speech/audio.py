"""Any voice note a customer can send → 16 kHz mono float32 PCM, the input every speech model
takes.

WhatsApp voice notes are OGG/Opus; forwarded audio arrives as AAC, MP4/M4A, AMR, MP3 or WAV.
Decoding uses PyAV (FFmpeg's libraries inside a wheel, installed with faster-whisper), so no
`ffmpeg` binary is needed at run time. Two failures are told apart because a manager acts on
them differently: `AudioTooLong` (ask for a shorter message or listen) and `AudioUnreadable`
(a broken or unsupported file). Both messages are written for the manager who reads them.
"""

from __future__ import annotations

import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import av
import av.error
import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000

# What a provider's MIME type says about a file, for the file name we store and serve.
EXTENSIONS = {
    "audio/ogg": ".ogg",
    "audio/opus": ".opus",
    "audio/aac": ".aac",
    "audio/mp4": ".m4a",
    "audio/x-m4a": ".m4a",
    "audio/m4a": ".m4a",
    "audio/amr": ".amr",
    "audio/mpeg": ".mp3",
    "audio/mp3": ".mp3",
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "audio/wave": ".wav",
    "audio/webm": ".webm",
    "video/mp4": ".mp4",
}


class AudioError(Exception):
    """The audio itself cannot be transcribed; retrying will not help."""


class AudioUnreadable(AudioError):
    pass


class AudioTooLong(AudioError):
    def __init__(self, seconds: float, limit: float) -> None:
        self.seconds = seconds
        self.limit = limit
        super().__init__(
            f"The voice message is {_minutes(seconds)} long; messages longer than "
            f"{_minutes(limit)} are not transcribed automatically. Please listen to it."
        )


@dataclass(frozen=True)
class Pcm:
    """Decoded audio: mono float32 samples in [-1, 1] at `SAMPLE_RATE`."""

    samples: npt.NDArray[np.float32]

    @property
    def duration_s(self) -> float:
        return len(self.samples) / SAMPLE_RATE

    def to_wav(self) -> bytes:
        """16-bit PCM WAV: the one container every transcription server reads."""
        clipped = np.clip(self.samples, -1.0, 1.0)
        pcm16 = (clipped * 32767.0).astype("<i2").tobytes()
        header = b"".join(
            [
                b"RIFF",
                (36 + len(pcm16)).to_bytes(4, "little"),
                b"WAVEfmt ",
                (16).to_bytes(4, "little"),
                (1).to_bytes(2, "little"),  # PCM
                (1).to_bytes(2, "little"),  # mono
                SAMPLE_RATE.to_bytes(4, "little"),
                (SAMPLE_RATE * 2).to_bytes(4, "little"),
                (2).to_bytes(2, "little"),
                (16).to_bytes(2, "little"),
                b"data",
                len(pcm16).to_bytes(4, "little"),
            ]
        )
        return header + pcm16


AudioSource = bytes | str | os.PathLike[str]


def decode(source: AudioSource, *, max_seconds: float) -> Pcm:
    """Decode and resample `source` (file bytes or a path). Raises `AudioTooLong` past
    `max_seconds` (checked on the container's declared length first, so a long file is refused
    before it is decoded) and `AudioUnreadable` for anything that does not decode to sound."""
    if isinstance(source, bytes):
        return _decode(io.BytesIO(source), max_seconds)
    with Path(source).open("rb") as file:
        return _decode(file, max_seconds)


def _decode(file: BinaryIO, max_seconds: float) -> Pcm:
    try:
        container = av.open(file, mode="r", metadata_errors="ignore")
    except (av.error.FFmpegError, ValueError, OSError) as exc:
        log.info("audio.unreadable", extra={"stage": "open", "error": type(exc).__name__})
        raise AudioUnreadable(_UNREADABLE) from exc
    with container:
        audio_streams = list(container.streams.audio)
        if not audio_streams:
            raise AudioUnreadable("The file has no sound track, so it cannot be transcribed.")
        stream = audio_streams[0]
        declared = _declared_seconds(container, stream)
        if declared is not None and declared > max_seconds + 0.5:
            raise AudioTooLong(declared, max_seconds)

        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        limit = int((max_seconds + 0.5) * SAMPLE_RATE)
        chunks: list[npt.NDArray[np.float32]] = []
        total = 0
        try:
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    chunk = out.to_ndarray().reshape(-1).astype(np.float32, copy=False)
                    chunks.append(chunk)
                    total += len(chunk)
                if total > limit:
                    raise AudioTooLong(total / SAMPLE_RATE, max_seconds)
            for out in resampler.resample(None):
                chunk = out.to_ndarray().reshape(-1).astype(np.float32, copy=False)
                chunks.append(chunk)
                total += len(chunk)
        except (av.error.FFmpegError, ValueError, MemoryError) as exc:
            log.info("audio.unreadable", extra={"stage": "decode", "error": type(exc).__name__})
            raise AudioUnreadable(_UNREADABLE) from exc
    if total == 0:
        raise AudioUnreadable("The voice message contains no sound.")
    if total > limit:
        raise AudioTooLong(total / SAMPLE_RATE, max_seconds)
    return Pcm(np.concatenate(chunks))


def _declared_seconds(
    container: av.container.InputContainer, stream: av.AudioStream
) -> float | None:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / av.time_base
    return None


def _minutes(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60:02d} s"


_UNREADABLE = (
    "The voice message could not be read: the file is damaged or in a format we cannot play. "
    "Please ask the customer to send it again or to write the message."
)
