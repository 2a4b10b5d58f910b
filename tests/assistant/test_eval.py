"""assistant_eval: the golden set scored on the catalogue assistant and, over real HTTP, on an
OpenAI-compatible server (the emulator) answering well, inventing prices, or breaking JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from assistant.eval.runner import load_golden
from assistant.knowledge.money import format_money
from tests.emulators.openai_server import OpenAIEmulator, Step
from tests.processes import ROOT

GOLDEN = load_golden()
BY_TEXT = {" ".join(e.text for e in c.turn.pending): c for c in GOLDEN.cases}
MARKER = "to decide on now:\n"


def case_of(request):
    text = request.messages[-1]["content"]
    if MARKER not in text:  # a repair request: the original prompt comes first
        text = next(m["content"] for m in request.messages if MARKER in m["content"])
    lines = text.split(MARKER, 1)[1].strip().splitlines()
    said = " ".join(line.split(": ", 1)[1] for line in lines)
    return BY_TEXT[said]


def oracle(request):
    case = case_of(request)
    if case.expected_prices:
        reply = "Here you are: " + ", ".join(format_money(p, "KZT") for p in case.expected_prices)
    elif case.expected_action == "handoff":
        reply = "A manager will reply here shortly."
    else:
        reply = "Could you tell me more?" if case.expected_action == "clarify" else "Sure."
    return Step.decision(action=case.expected_action, reason=case.expected_reason, reply=reply)


def liar(request):
    case = case_of(request)
    return Step.decision(action="answer", reply=f"Special for you: {len(case.id)} 999 KZT, 15% off")


def summary(capsys):
    out = capsys.readouterr().out
    return json.loads(out[: out.rindex("]") + 1])


def test_golden_set_has_forty_plus_conversations_over_several_businesses():
    assert len(GOLDEN.cases) >= 40
    assert len(GOLDEN.knowledge) >= 4
    languages = {c.turn.language for c in GOLDEN.cases}
    assert {"en", "ru", "kk"} <= languages
    assert sum(c.turn.lowest_voice_confidence is not None for c in GOLDEN.cases) >= 5


def test_catalogue_assistant_scores(capsys):
    call_command("assistant_eval", json=True, min_escalation_accuracy=0.9)
    (report,) = summary(capsys)
    assert report["name"] == "catalogue"
    assert report["json_validity"] == 1.0
    assert report["invented_price_rate"] == 0.0
    assert report["escalation_accuracy"] >= 0.9
    with pytest.raises(CommandError, match="check"):
        call_command("assistant_eval", json=True, min_escalation_accuracy=0.999)


def test_a_model_that_follows_the_golden_answers_scores_perfectly(capsys):
    with OpenAIEmulator() as emu:
        emu.responder = oracle
        call_command(
            "assistant_eval",
            base_url=emu.base_url,
            model="assistant",
            json=True,
            min_escalation_accuracy=1.0,
            max_invented_price_rate=0.0,
            min_json_validity=1.0,
        )
        requests = emu.chat_requests
    (report,) = summary(capsys)
    assert report["escalation_accuracy"] == 1.0
    assert report["price_accuracy"] == 1.0
    assert len(requests) == len(GOLDEN.cases)
    assert all(r.response_format["type"] == "json_schema" for r in requests)


def test_invented_prices_and_broken_json_fail_the_thresholds(capsys):
    with OpenAIEmulator() as emu:
        emu.responder = liar
        with pytest.raises(CommandError):
            call_command(
                "assistant_eval",
                base_url=emu.base_url,
                model="assistant",
                structured_output="json_object",
                json=True,
                max_invented_price_rate=0.05,
            )
    (report,) = summary(capsys)
    # Every reply invents a price, except low-confidence voice turns (asked to repeat instead).
    voice = sum((c.turn.lowest_voice_confidence or 1) < 0.6 for c in GOLDEN.cases)
    assert report["invented_price_rate"] == pytest.approx(1 - voice / len(GOLDEN.cases), abs=1e-3)

    with OpenAIEmulator() as emu:
        calls = iter(range(10_000))
        emu.responder = lambda r: Step.not_json() if next(calls) % 2 == 0 else oracle(r)
        with pytest.raises(CommandError):
            call_command(
                "assistant_eval",
                base_url=emu.base_url,
                model="assistant",
                json=True,
                min_json_validity=0.95,
            )
    (report,) = summary(capsys)
    assert report["json_validity"] == 0.0  # every first answer needed the repair
    assert report["escalation_accuracy"] == 1.0  # and every repair worked


def test_compare_refuses_a_candidate_that_regresses(capsys):
    with OpenAIEmulator() as baseline, OpenAIEmulator() as candidate:
        baseline.responder = oracle
        candidate.responder = liar
        with pytest.raises(CommandError):
            call_command(
                "assistant_eval",
                base_url=candidate.base_url,
                model="assistant",
                compare_base_url=baseline.base_url,
                compare_model="assistant",
                tolerance=0.05,
            )
        out = capsys.readouterr()
        assert "baseline" in out.out
        assert "candidate" in out.out
        assert "candidate refused: escalation accuracy" in out.err
        assert "candidate refused: invented-price rate" in out.err

        candidate.responder = oracle
        call_command(
            "assistant_eval",
            base_url=candidate.base_url,
            model="assistant",
            compare_base_url=baseline.base_url,
            compare_model="assistant",
        )
        assert capsys.readouterr().out.strip().endswith("OK")


def test_the_command_line_exit_code():
    """What CI and gpu_check.sh see: 0 when the thresholds hold, non-zero when not."""
    ok = subprocess.run(
        [sys.executable, "manage.py", "assistant_eval", "--max-invented-price-rate", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert "escalation accuracy" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "manage.py", "assistant_eval", "--min-escalation-accuracy", "1.01"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1
    assert "FAIL: escalation accuracy" in bad.stderr
