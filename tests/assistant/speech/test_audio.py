"""Every audio format a customer sends becomes 16 kHz mono PCM; broken and too-long files are
refused with a message a manager can act on."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np
import pytest

from assistant.speech.audio import SAMPLE_RATE, AudioTooLong, AudioUnreadable, Pcm, decode
from tests.speech_samples import FORMATS, encode, encoded_tone, ogg_opus, speak, tone


@pytest.fixture(scope="module")
def spoken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return speak("Two chairs to Almaty please", tmp_path_factory.mktemp("audio"), "chairs")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_each_customer_format_decodes_to_16khz_mono(fmt: str) -> None:
    # given a 2-second tone encoded the way that format's senders encode it
    data = encoded_tone(fmt)

    # when it is decoded
    pcm = decode(data, max_seconds=300)

    # then it is float32 mono at 16 kHz, as long as the original (codec padding aside)
    assert pcm.samples.dtype == np.float32
    assert pcm.samples.ndim == 1
    assert pcm.duration_s == pytest.approx(2.0, abs=0.15)
    # and it is still the same sound: the 440 Hz tone dominates the spectrum
    spectrum = np.abs(np.fft.rfft(pcm.samples))
    peak_hz = np.argmax(spectrum) * SAMPLE_RATE / len(pcm.samples)
    assert peak_hz == pytest.approx(440, abs=10)


def test_whatsapp_voice_note_from_ffmpeg_decodes(spoken: Path) -> None:
    data = ogg_opus(spoken)  # what WhatsApp sends: OGG/Opus made by a real encoder

    pcm = decode(data, max_seconds=300)

    with wave.open(str(spoken)) as original:
        seconds = original.getnframes() / original.getframerate()
    assert pcm.duration_s == pytest.approx(seconds, abs=0.1)
    assert float(np.sqrt(np.mean(pcm.samples**2))) > 0.01  # sound, not silence


def test_a_path_decodes_like_bytes(spoken: Path) -> None:
    assert decode(spoken, max_seconds=300).duration_s == pytest.approx(
        decode(spoken.read_bytes(), max_seconds=300).duration_s
    )


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"this is not audio at all " * 40, id="text"),
        pytest.param(b"OggS" + bytes(range(256)) * 8, id="corrupt-ogg"),
        pytest.param(b"\x89PNG\r\n\x1a\n" + b"\x00" * 400, id="image"),
    ],
)
def test_garbage_is_unreadable_with_a_message_for_the_manager(data: bytes) -> None:
    with pytest.raises(AudioUnreadable) as error:
        decode(data, max_seconds=300)

    assert "could not be read" in str(error.value) or "no sound" in str(error.value)


def test_a_file_cut_after_its_header_is_unreadable() -> None:
    data = encode(tone(2.0), "ogg_opus")

    with pytest.raises(AudioUnreadable):
        decode(data[:200], max_seconds=300)


def test_a_file_without_a_sound_track_is_unreadable() -> None:
    import av

    out = io.BytesIO()
    with av.open(out, mode="w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=5)
        stream.width, stream.height = 32, 32
        for _ in range(5):
            frame = av.VideoFrame.from_ndarray(np.zeros((32, 32, 3), np.uint8), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)

    with pytest.raises(AudioUnreadable, match="no sound track"):
        decode(out.getvalue(), max_seconds=300)


@pytest.mark.parametrize("fmt", ["ogg_opus", "mp3", "wav", "aac"])
def test_too_long_audio_is_refused_with_its_length(fmt: str) -> None:
    data = encode(tone(12.0), fmt)

    with pytest.raises(AudioTooLong) as error:
        decode(data, max_seconds=10)

    assert error.value.seconds == pytest.approx(12.0, abs=0.5)
    assert "12 s long" in str(error.value)
    assert "longer than 10 s" in str(error.value)


def test_audio_at_the_limit_is_accepted() -> None:
    assert decode(encode(tone(10.0), "ogg_opus"), max_seconds=10).duration_s == pytest.approx(
        10.0, abs=0.1
    )


def test_minutes_are_written_as_minutes() -> None:
    assert "6 min 40 s long" in str(AudioTooLong(400, 300))
    assert "longer than 5 min 00 s" in str(AudioTooLong(400, 300))


def test_pcm_as_wav_is_16khz_mono_16bit() -> None:
    pcm = tone(1.5)

    with wave.open(io.BytesIO(pcm.to_wav())) as wav:
        assert (wav.getnchannels(), wav.getframerate(), wav.getsampwidth()) == (1, 16000, 2)
        assert wav.getnframes() == len(pcm.samples)
    assert decode(pcm.to_wav(), max_seconds=10).samples == pytest.approx(pcm.samples, abs=1e-3)


def test_pcm_duration() -> None:
    assert Pcm(np.zeros(8000, np.float32)).duration_s == 0.5
