"""Measure the embedded speech backend: word error rate, confidence, speed, word probabilities.

    TESTING=1 .venv/bin/python -m bench.speech_accuracy [--models base,tiny.en] [--quick]

Speaks the test sentences with espeak-ng, encodes them as WhatsApp voice notes (OGG/Opus via
ffmpeg), mixes white and babble noise at 10, 5 and 0 dB SNR, and transcribes each with the
catalogue prompt. Prints, per model and condition, the mean WER and the confidence range; the
model load time and transcription time per second of audio; and how well a word probability
threshold separates right words from wrong ones (words matched to the reference by edit
distance). The figures in `assistant/speech/backend.py`'s docstring and the test thresholds come
from this script.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inbox.site.settings")
os.environ.setdefault("TESTING", "1")

import django

django.setup()

import numpy as np  # noqa: E402

from assistant.speech.audio import Pcm, decode  # noqa: E402
from assistant.speech.embedded import (  # noqa: E402
    EmbeddedWhisper,
    default_cpu_threads,
    load_model,
    model_folder,
)
from assistant.speech.transcribe import Transcript, build_prompt  # noqa: E402
from tests.speech_samples import (  # noqa: E402
    CATALOGUE_WORDS,
    SENTENCES,
    babble_noise,
    ogg_opus,
    speak,
    white_noise,
    with_noise,
    word_error_rate,
    words,
)


def matched_words(reference: str, transcript: Transcript) -> list[tuple[float, bool]]:
    """(probability, is it right) for each transcribed word, by a Levenshtein alignment."""
    ref = words(reference)
    hyp = [(w.word, w.probability) for s in transcript.segments for w in s.words]
    hyp_words = [words(w)[0] if words(w) else "" for w, _ in hyp]
    n, m = len(ref), len(hyp_words)
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        cost[i][0] = i
    for j in range(m + 1):
        cost[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost[i][j] = min(
                cost[i - 1][j] + 1,
                cost[i][j - 1] + 1,
                cost[i - 1][j - 1] + (ref[i - 1] != hyp_words[j - 1]),
            )
    right = [False] * m
    i, j = n, m
    while i > 0 and j > 0:
        if cost[i][j] == cost[i - 1][j - 1] + (ref[i - 1] != hyp_words[j - 1]):
            right[j - 1] = ref[i - 1] == hyp_words[j - 1]
            i, j = i - 1, j - 1
        elif cost[i][j] == cost[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
    return [(p if p is not None else 0.0, ok) for (_, p), ok in zip(hyp, right, strict=True)]


def conditions(clean: Pcm, index: int, workdir: Path, quick: bool) -> dict[str, Pcm]:
    out = {"clean": clean}
    n = len(clean.samples)
    babble = babble_noise(n, workdir)
    for snr in (10, 5, 0) if not quick else (0,):
        out[f"white {snr:>2} dB"] = with_noise(clean, white_noise(n, seed=snr + index), snr)
        out[f"babble {snr:>2} dB"] = with_noise(clean, babble, snr)
    return out


def run(models: list[str], quick: bool) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="speech-bench-"))
    prompt = build_prompt(CATALOGUE_WORDS)
    clean = {
        i: decode(ogg_opus(speak(text, workdir, f"s{i}")), max_seconds=60)
        for i, text in enumerate(SENTENCES)
    }
    for model_name in models:
        started = time.monotonic()
        folder = model_folder(model_name)
        assembled = time.monotonic()
        load_model(folder, default_cpu_threads())
        print(
            f"\n== {model_name}: folder ready in {assembled - started:.2f} s, "
            f"model loaded in {time.monotonic() - assembled:.2f} s"
        )
        backend = EmbeddedWhisper(model_name, default_cpu_threads())
        by_condition: dict[str, list[tuple[float, float]]] = {}
        word_scores: list[tuple[float, bool]] = []
        speed: list[float] = []
        no_prompt_wer: list[float] = []
        for i, text in enumerate(SENTENCES):
            for name, pcm in conditions(clean[i], i, workdir, quick).items():
                t0 = time.monotonic()
                result = backend.transcribe(pcm, language="en", prompt=prompt)
                speed.append((time.monotonic() - t0) / pcm.duration_s)
                wer = word_error_rate(text, result.text)
                by_condition.setdefault(name, []).append((wer, result.confidence))
                if not name.endswith(" 0 dB"):  # 0 dB is mostly invented text, not misheard words
                    word_scores += matched_words(text, result)
                print(f"  {i} {name:12} wer={wer:.2f} conf={result.confidence:.2f} {result.text}")
            bare = backend.transcribe(clean[i], language="en", prompt="")
            no_prompt_wer.append(word_error_rate(text, bare.text))
        print(f"\n  {'condition':12} {'mean WER':>8}  confidence (mean, min-max)")
        for name, rows in by_condition.items():
            confs = [c for _, c in rows]
            print(
                f"  {name:12} {statistics.mean(w for w, _ in rows):8.2f}  "
                f"{statistics.mean(confs):.2f} ({min(confs):.2f}-{max(confs):.2f})"
            )
        print(
            f"  clean without the catalogue prompt: mean WER {statistics.mean(no_prompt_wer):.2f}"
        )
        flat = [(w, c) for rows in by_condition.values() for w, c in rows]
        corr = np.corrcoef([c for _, c in flat], [min(w, 1.0) for w, _ in flat])[0, 1]
        print(f"  correlation(confidence, WER) = {corr:+.2f}")
        print(
            f"  transcription time per audio second: median {statistics.median(speed):.2f} s, "
            f"max {max(speed):.2f} s ({default_cpu_threads()} CPU threads)"
        )
        print("  words below, from clean, 10 dB and 5 dB audio:")
        right = sorted(p for p, ok in word_scores if ok)
        wrong = sorted(p for p, ok in word_scores if not ok)
        print(
            f"  word probability: right words {len(right)} median {statistics.median(right):.2f} "
            f"range {right[0]:.2f}-{right[-1]:.2f}; wrong words {len(wrong)} median "
            f"{statistics.median(wrong) if wrong else float('nan'):.2f}"
        )
        for threshold in (0.3, 0.4, 0.5, 0.6, 0.7):
            flagged_wrong = sum(p < threshold for p in wrong)
            flagged_right = sum(p < threshold for p in right)
            print(
                f"    flag < {threshold:.1f}: catches {flagged_wrong}/{len(wrong)} wrong words, "
                f"flags {flagged_right}/{len(right)} right ones"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="base,tiny.en")
    parser.add_argument("--quick", action="store_true", help="clean and 0 dB only")
    args = parser.parse_args()
    run([m for m in args.models.split(",") if m], args.quick)


if __name__ == "__main__":
    main()
