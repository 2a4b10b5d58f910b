"""Real audio for speech tests, made during the run: espeak-ng speaks known sentences, ffmpeg
encodes them as WhatsApp does (OGG/Opus), PyAV's own encoders make the other formats, numpy
mixes in noise at a chosen signal-to-noise ratio. Nothing is stored in the repository.

Tests that need a missing program skip with the Debian package to install.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

import av
import numpy as np
import numpy.typing as npt
import pytest

from assistant.speech.audio import SAMPLE_RATE, Pcm, decode

# Sentences a furniture shop's customers might send, and the catalogue words the shop's price
# list gives the model as its prompt.
SENTENCES = [
    "I would like two chairs delivered to Almaty",
    "How much does the oak dining table cost",
    "Can you send the blue sofa to Astana next week",
    "Do you have the office desk in white",
    "Please call me back tomorrow morning",
    "What is the price of delivery to Karaganda",
]
CATALOGUE_WORDS = [
    "oak dining table", "office desk", "blue sofa", "chairs", "wardrobe",
    "Almaty", "Astana", "Karaganda", "Shymkent",
]  # fmt: skip
# Other voices talking at once: the "babble" noise of a busy shop.
BABBLE_SENTENCES = [
    "The weather was very nice yesterday afternoon",
    "My brother bought a new car last month",
    "We will meet at the station at nine",
    "She is reading a long book about history",
]


def require(program: str, package: str | None = None) -> str:
    path = shutil.which(program)
    if path is None:
        pytest.skip(
            f"{program} is not installed (apt-get install {package or program}; "
            "`make test` installs it when run as root)"
        )
    return path


def speak(text: str, directory: Path, name: str, *, speed: int = 175, pitch: int = 50) -> Path:
    """espeak-ng's English voice reading `text`, as a 22 kHz WAV."""
    require("espeak-ng")
    wav = directory / f"{name}.wav"
    subprocess.run(
        ["espeak-ng", "-v", "en", "-s", str(speed), "-p", str(pitch), "-w", str(wav), text],
        check=True, capture_output=True,
    )  # fmt: skip
    return wav


def ogg_opus(wav: Path) -> bytes:
    """The file a WhatsApp voice note is: OGG/Opus, mono, 48 kHz, ~24 kbit/s (ffmpeg)."""
    require("ffmpeg")
    out = wav.with_suffix(".ogg")
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-y", "-i", str(wav), "-ac", "1", "-c:a", "libopus",
         "-b:a", "24k", "-application", "voip", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    return out.read_bytes()


# container format, codec, sample rate, file suffix
FORMATS = {
    "ogg_opus": ("ogg", "libopus", 48_000, ".ogg"),
    "aac": ("adts", "aac", 44_100, ".aac"),
    "m4a": ("ipod", "aac", 44_100, ".m4a"),
    "mp4": ("mp4", "aac", 44_100, ".mp4"),
    "amr": ("amr", "libopencore_amrnb", 8_000, ".amr"),
    "mp3": ("mp3", "libmp3lame", 44_100, ".mp3"),
    "wav": ("wav", "pcm_s16le", 16_000, ".wav"),
}


# AMR-NB as Android phones send it (12.2 kbit/s, 8 kHz) of `tone(2.0)`: made once with PyAV
# 18.1.0's libopencore_amrnb encoder, which later PyAV wheels no longer bundle (they still
# decode AMR, as the product must). Debian's ffmpeg has no AMR encoder either.
AMR_TONE = Path(__file__).resolve().parent / "data" / "tone_440hz_2s.amr"


def encoded_tone(fmt: str) -> bytes:
    """A 2-second 440 Hz tone in one of `FORMATS`, encoded the way that format's senders do."""
    if fmt == "amr":
        return AMR_TONE.read_bytes()
    return encode(tone(2.0), fmt)


def encode(pcm: Pcm, fmt: str) -> bytes:
    """`pcm` encoded into one of `FORMATS` with PyAV's bundled encoders (Debian's ffmpeg has
    no AMR encoder; PyAV's FFmpeg build has one)."""
    container_format, codec, rate, _suffix = FORMATS[fmt]
    out = io.BytesIO()
    with av.open(out, mode="w", format=container_format) as container:
        stream = container.add_stream(codec, rate=rate, layout="mono")  # type: ignore[call-overload]
        if codec == "libopencore_amrnb":
            stream.bit_rate = 12_200
        resampler = av.AudioResampler(format=stream.format.name, layout="mono", rate=rate)
        frame = av.AudioFrame.from_ndarray(
            pcm.samples.reshape(1, -1).astype(np.float32), format="flt", layout="mono"
        )
        frame.sample_rate = SAMPLE_RATE
        frame_size = stream.codec_context.frame_size or 1024
        fifo = av.AudioFifo()
        for resampled in resampler.resample(frame):
            fifo.write(resampled)
        for resampled in resampler.resample(None):
            fifo.write(resampled)
        while fifo.samples >= frame_size:
            for packet in stream.encode(fifo.read(frame_size)):
                container.mux(packet)
        if fifo.samples:
            for packet in stream.encode(fifo.read()):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def tone(seconds: float, hz: float = 440.0) -> Pcm:
    t = np.arange(int(seconds * SAMPLE_RATE), dtype=np.float32) / SAMPLE_RATE
    return Pcm((0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32))


def silence(seconds: float) -> Pcm:
    return Pcm(np.zeros(int(seconds * SAMPLE_RATE), dtype=np.float32))


def with_noise(pcm: Pcm, noise: npt.NDArray[np.float32], snr_db: float) -> Pcm:
    """`pcm` plus `noise` scaled so that speech power / noise power = `snr_db`."""
    noise = np.resize(noise, len(pcm.samples)).astype(np.float32)
    speech_rms = float(np.sqrt(np.mean(pcm.samples**2)))
    noise_rms = float(np.sqrt(np.mean(noise**2))) or 1.0
    scaled = noise * (speech_rms / (10 ** (snr_db / 20)) / noise_rms)
    return Pcm((pcm.samples + scaled).astype(np.float32))


def white_noise(n: int, seed: int = 0) -> npt.NDArray[np.float32]:
    return np.random.default_rng(seed).normal(0.0, 1.0, n).astype(np.float32)


def babble_noise(n: int, directory: Path) -> npt.NDArray[np.float32]:
    """Four other espeak-ng voices talking at once, offset from each other."""
    total = np.zeros(n, dtype=np.float32)
    for k, text in enumerate(BABBLE_SENTENCES):
        wav = speak(text, directory, f"babble{k}", speed=190, pitch=70)
        voice = decode(wav, max_seconds=60).samples
        total += np.resize(np.roll(voice, k * 3000), n)
    return total


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / reference words, on lower-cased words."""
    ref, hyp = words(reference), words(hypothesis)
    previous = list(range(len(hyp) + 1))
    for i, ref_word in enumerate(ref, 1):
        current = [i]
        for j, hyp_word in enumerate(hyp, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref_word != hyp_word))
            )
        previous = current
    return previous[-1] / max(1, len(ref))
