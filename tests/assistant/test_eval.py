"""assistant_eval: the golden set, the eval's own amount judge, and the runner's figures — on the
catalogue assistant and, over real HTTP, on an OpenAI-compatible server (the emulator) answering
well, inventing amounts, getting a total wrong, or breaking JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from assistant.eval.judge import judge, name_numbers, parse_allowed, read_amounts, summary_misses
from assistant.eval.runner import CaseResult, Golden, Report, eval_client, load_golden, run
from assistant.knowledge.money import format_money
from assistant.models import DEFAULT_HANDOFF_REASONS, SYSTEM_HANDOFF_REASONS
from tests.emulators.openai_server import OpenAIEmulator, Step
from tests.processes import ROOT

GOLDEN = load_golden()
BY_TEXT = {" ".join(e.text for e in c.turn.pending): c for c in GOLDEN.cases}
BY_ID = {c.id: c for c in GOLDEN.cases}
MARKER = "to decide on now:\n"

# The behaviours the set must cover (issue 15, part 4), each in at least two languages.
CATEGORIES = (
    "negation", "multi_item", "rules", "manager_agreement", "voice", "cross_language", "kk_mix",
    "clarify_then_new", "exact_name", "ambiguous", "outside", "complaint", "asks_for_human",
    "terms", "buy", "greeting", "translit", "typo",
)  # fmt: skip


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


def quitter(request):
    """Hands every turn to a person, with a made-up amount in the notice."""
    case = case_of(request)
    return Step.decision(
        action="handoff",
        reason="asks_for_human",
        reply=f"A manager will call: {len(case.id)} 999 KZT",
    )


def summary(capsys):
    out = capsys.readouterr().out
    return json.loads(out[: out.rindex("]") + 1])


def only(*ids: str) -> Golden:
    return replace(GOLDEN, cases=tuple(BY_ID[i] for i in ids))


def scored(ids: tuple[str, ...], reply: str, action: str = "answer", reason: str = ""):
    """The runner's report on these cases when the model always gives this reply."""
    with OpenAIEmulator() as emu:
        emu.responder = lambda r: Step.decision(action=action, reason=reason, reply=reply)
        client = eval_client(emu.base_url, "assistant", "json_schema", timeout=10)
        return run(only(*ids), client, "scripted")


# The golden set itself.


def test_golden_set_size_and_coverage():
    cases = GOLDEN.cases
    assert len(cases) >= 150
    assert len(GOLDEN.knowledge) >= 5
    assert {c.business for c in cases} == set(GOLDEN.knowledge)
    assert {"en", "ru", "kk"} <= {c.language for c in cases}
    for category in CATEGORIES:
        tagged = [c for c in cases if category in c.categories]
        languages = {c.language for c in tagged}
        assert len(tagged) >= 3, category
        assert len(languages) >= 2, (category, languages)
    # Spread: no business is a token, and every business has handoffs and priced answers.
    for key in GOLDEN.knowledge:
        mine = [c for c in cases if c.business == key]
        assert len(mine) >= 25, key
        assert any(c.expected_action == "handoff" for c in mine), key
        assert sum(bool(c.expected_prices) for c in mine) >= 10, key


def test_a_business_lists_in_english_and_is_asked_in_russian():
    def latin(name: str) -> bool:
        return not any("а" <= ch.lower() <= "я" for ch in name)

    english = [
        key
        for key, k in GOLDEN.knowledge.items()
        if all(latin(item.name) for item in k.items)
        and sum(c.business == key and c.language == "ru" for c in GOLDEN.cases) >= 20
    ]
    assert english, "no business with an English price list asked in Russian"


def test_golden_cases_are_well_formed():
    reasons = {r["code"] for r in DEFAULT_HANDOFF_REASONS} | set(SYSTEM_HANDOFF_REASONS)
    assert len(BY_TEXT) == len(GOLDEN.cases), "two cases share their customer text"
    for case in GOLDEN.cases:
        assert case.categories, case.id
        assert case.expected_action in ("answer", "clarify", "handoff"), case.id
        if case.expected_action == "handoff":
            assert case.expected_reason in reasons, case.id
        for action, reason in case.accept:
            assert action in ("answer", "clarify", "handoff"), case.id
            assert action != "handoff" or reason in reasons | {"*"}, case.id
        if "voice" in case.categories:
            assert case.turn.lowest_voice_confidence is not None, case.id
        if "manager_agreement" in case.categories:
            assert any(h.speaker == "manager" for h in case.turn.history), case.id


def test_every_rule_amount_is_written_in_the_business_rules():
    for key, business in GOLDEN.businesses.items():
        rules = GOLDEN.config[key].business_rules
        written = {a.key for a in read_amounts(rules)}
        assert business.rule_amounts, key
        assert business.rule_amounts <= written, (key, business.rule_amounts - written)


def test_order_totals_in_the_golden_set_are_the_sums_of_their_lines():
    # furn-02: "a coffee table and 2 bar stools" = 56 000 + 2 × 32 000.
    assert BY_ID["furn-02"].required == ("56000", "64000", "120000")
    # auto-05: "4 свечи денсо и масляный фильтр" = 4 × 4 200 + 3 500.
    assert BY_ID["auto-05"].required == ("16800", "3500", "20300")


# The judge's reader.


@pytest.mark.parametrize(
    ("text", "amounts"),
    [
        ("The price per chair is 40K, so ten chairs would be 400K.", ["40000", "400000"]),
        ("40k / 40 тыс / 40 тысяч / 40 000 / 40,000 / 40.000", ["40000"] * 6),
        ("₸40 000, 40 000 тг, 40 000 KZT, 40 000 тенге", ["40000"] * 4),
        ("всего 1.5 млн или 1,5 млн", ["1500000", "1500000"]),
        ("15% off, скидка 10 процентов", ["15%", "10%"]),
        ("$1,200.50", ["1200.5"]),
        ("3 000-5 000 тг", ["3000", "5000"]),
    ],
)
def test_the_judge_reads_amounts_as_people_write_them(text, amounts):
    assert [a.key for a in read_amounts(text)] == amounts


def test_the_judge_does_not_read_codes_sizes_times_and_phones_as_amounts():
    names = name_numbers(["Oak dining table 160", "Tire Michelin 215/60 R16", "Букет 101 роза"])
    text = (
        "Oak dining table 160 (CH-101, 04465-33471): Tire Michelin 215/60 R16, 8 pcs, Букет 101 "
        "роза, Bosch 600мм, Varta 75Ah, 160 см, open 10:00-20:00, call +7 701 123 45 67, 2 weeks"
    )
    assert read_amounts(text, names) == []
    # With a currency mark a name's number is an amount again.
    assert [a.key for a in read_amounts("just 160 тг", names)] == ["160"]


def test_a_wrong_total_is_wrong_and_a_right_multi_line_order_passes():
    case = BY_ID["furn-02"]
    right = (
        "Coffee table Oslo: 56 000 KZT\nСтул барный Лофт: 2 × 32 000 KZT = 64 000 KZT\n"
        "Total: 120 000 KZT"
    )
    verdict = judge(right, case.required, case.allowed)
    assert not verdict.wrong
    assert not verdict.missing
    wrong = right.replace("Total: 120 000", "Total: 165 800")
    verdict = judge(wrong, case.required, case.allowed)
    assert [a.text for a in verdict.wrong] == ["165 800 KZT"]
    assert verdict.missing == ("120000",)


def test_parse_allowed_normalises_golden_amounts():
    assert parse_allowed("45 000") == parse_allowed(45000) == parse_allowed("45000.00") == "45000"
    assert parse_allowed("100%") == "100%"
    with pytest.raises(ValueError):
        parse_allowed("free")


# The runner's figures, through a real HTTP model server.


def test_a_wrong_total_counts_as_a_wrong_amount_and_a_miss_in_the_category():
    wrong = (
        "Coffee table Oslo: 2 × 56 000 KZT = 112 000 KZT\nСтул барный Лофт: 2 × 32 000 KZT = "
        "64 000 KZT\nTotal: 176 000 KZT"
    )
    report = scored(("furn-02",), wrong)
    assert report.wrong_amounts == 2  # 112 000 (a coffee table, not two) and the total
    assert report.price_accuracy == 0.0
    (result,) = report.results
    assert result.missing == ["120000"]  # 56 000 is there, as the unit price
    assert result.unlisted == ["112 000 KZT", "176 000 KZT"]
    groups = report.by_category()
    assert set(groups) == {"multi_item", "cross_language"}
    assert groups["multi_item"]["wrong_amounts"] == 2
    assert report.by_business()["furniture"]["price_accuracy"] == 0.0


def test_a_right_multi_line_order_scores_full_marks():
    right = (
        "Coffee table Oslo: 56 000 KZT\nСтул барный Лофт: 2 × 32 000 KZT = 64 000 KZT\n"
        "Total: 120 000 KZT. Delivery in Almaty 3 000 KZT."
    )
    report = scored(("furn-02",), right)
    assert report.wrong_amounts == 0
    assert report.price_accuracy == 1.0
    assert report.escalation_accuracy == report.action_accuracy == 1.0


def test_after_a_manager_agreed_the_list_price_is_wrong_and_a_handoff_is_right():
    # furn-23: the manager agreed 40 000 a chair for 3 or more; the list price is 45 000.
    listed = scored(("furn-23",), "3 × 45 000 KZT = 135 000 KZT")
    assert listed.wrong_amounts == 2
    assert listed.wrong_unlisted == 1  # 45 000 is a list price, just not this chat's price
    agreed = scored(("furn-23",), "3 × 40 000 = 120 000 KZT, as agreed with the manager")
    assert agreed.wrong_amounts == 0
    assert agreed.price_accuracy == 1.0
    handoff = scored(("furn-23",), "A manager will reply.", "handoff", "non_standard_terms")
    assert handoff.escalation_accuracy == 1.0


def test_a_fee_the_manager_waived_is_a_wrong_amount():
    # auto-36: "доставка для вас бесплатно"; the rules' 1 500 delivery fee is wrong here.
    report = scored(("auto-36",), "Щётки Bosch 600мм: 6 500 тг, доставка 1 500 тг")
    assert [r.invented for r in report.results] == [["1 500 тг"]]


def test_a_handoff_for_the_wrong_reason_is_an_escalation_miss():
    report = scored(("furn-34",), "A manager will reply.", "handoff", "complaint")
    assert report.escalation_accuracy == 0.0
    assert report.action_accuracy == 1.0


def test_the_catalogue_run_reports_every_category_and_business(capsys):
    call_command("assistant_eval", json=True)
    (report,) = summary(capsys)
    assert report["name"] == "catalogue"
    assert report["cases"] == len(GOLDEN.cases)
    assert report["json_validity"] == 1.0
    assert report["invented_price_rate"] == report["wrong_amount_rate"]
    categories = {cat for c in GOLDEN.cases for cat in c.categories}
    assert set(report["by_category"]) == categories
    assert set(report["by_business"]) == set(GOLDEN.knowledge)
    for cat, figures in report["by_category"].items():
        assert figures["cases"] == sum(cat in c.categories for c in GOLDEN.cases)
    assert sum(f["cases"] for f in report["by_business"].values()) == len(GOLDEN.cases)


def test_the_catalogue_assistant_meets_the_golden_targets(capsys):
    """What every fresh install answers with: handed off exactly when it should be, for the
    right reason, with the right amounts, and no amount a right reply could not contain."""
    call_command("assistant_eval", json=True, no_breakdown=True)
    (report,) = summary(capsys)
    assert report["escalation_accuracy"] >= 0.95
    assert report["action_accuracy"] >= 0.90
    assert report["price_accuracy"] >= 0.90
    assert report["wrong_amounts"] == 0
    # The handoff card keeps the request (docs/evaluation.md: 0.045 with one fixed sentence per
    # reason, 1.000 with summaries built from the reading).
    assert report["summary_cases"] >= 60
    assert report["summary"] >= 0.95


def test_the_summary_judge_reads_facts_case_insensitively_and_numbers_by_value():
    card = "Клиент хочет купить: 2 × Диван угловой Бостон; скидка 10%; итого 84 990 KZT."
    assert summary_misses(card, ["бостон", "84990", "84 990", "10%", "2", "Скидка"]) == []
    assert summary_misses(card, ["10", "8499", "refund", "20%"]) == ["8499", "refund", "20%"]
    assert summary_misses("discount 10 000", ["10%"]) == ["10%"]


def test_the_summary_score_is_the_share_of_handoffs_whose_card_carries_every_fact():
    complaint, terms, answered = BY_ID["furn-32"], BY_ID["furn-28"], BY_ID["furn-01"]
    assert complaint.summary_must
    assert terms.summary_must
    assert not answered.summary_must  # an answer scores no summary
    report = run(only(complaint.id, terms.id, answered.id), None, "catalogue")
    assert (report.summary_score, report.scores()["summary_cases"]) == (1.0, 2)

    vague = CaseResult(complaint, action="handoff", reason="complaint", summary="Жалоба.")
    vague.summary_missing = summary_misses(vague.summary, complaint.summary_must)
    not_handed = CaseResult(terms, action="answer", summary="")
    assert vague.summary_ok is False
    assert Report("mixed", [vague, report.results[1]]).summary_score == 0.5
    assert not_handed.summary_ok is False  # no handoff, no card


def test_the_table_shows_where_the_backend_fails(capsys):
    call_command("assistant_eval", case=["furn-02", "dent-21"], show_misses=True)
    out = capsys.readouterr().out
    assert "by category" in out
    assert "by business" in out
    assert "multi_item" in out
    assert "complaint" in out
    assert "wrong-amount rate" in out


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
    assert report["action_accuracy"] == 1.0
    assert report["price_accuracy"] == 1.0
    assert report["wrong_amounts"] == 0
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
    # Every reply invents an amount, except low-confidence voice turns (asked to repeat instead)
    # and the turns code hands off whatever the model said (a complaint, a request for a person,
    # a purchase: `model_reading.CODE_READ_HANDOFFS`), whose reply is the handoff message.
    voice = sum((c.turn.lowest_voice_confidence or 1) < 0.6 for c in GOLDEN.cases)
    rate = report["invented_price_rate"]
    assert 0.7 <= rate < 1 - voice / len(GOLDEN.cases)
    lied = round(rate * len(GOLDEN.cases))
    assert report["wrong_amounts"] == 2 * lied  # "N 999 KZT" and "15%" in each of them

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
        candidate.responder = quitter
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
        [sys.executable, "manage.py", "assistant_eval", "--max-invented-price-rate", "1"],
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


def _single_file_golden(tmp_path, language: str, message: str, prices: list[str]) -> Golden:
    """The golden businesses with one florist case, written as an old single-file set."""
    raw = json.loads((ROOT / "assistant/eval/golden/businesses.json").read_text("utf-8"))
    raw["cases"] = [
        {
            "id": "x-1",
            "business": "florist",
            "language": language,
            "pending": [message],
            "expected": {"action": "answer", "prices": prices},
        }
    ]
    path = tmp_path / "golden.json"
    path.write_text(json.dumps(raw, ensure_ascii=False), "utf-8")
    return load_golden(path)


def test_an_old_single_file_golden_set_still_loads(tmp_path):
    golden = _single_file_golden(tmp_path, "ru", "51 роза почем?", ["52000"])
    assert [c.expected_prices for c in golden.cases] == [(Decimal(52000),)]


def test_a_required_percentage_must_be_stated_with_its_sign(tmp_path):
    golden = _single_file_golden(tmp_path, "en", "is there a discount for 51 roses?", ["10%"])
    [case] = golden.cases
    assert case.required == ("10%",)
    assert judge("A 10 000 KZT discount", case.required, frozenset()).missing == ("10%",)
    assert judge("From 51 roses: 10 % off.", case.required, frozenset()).missing == ()


# The first-sight sets: businesses of trades the golden set lacks (a building-materials shop, a
# salon, a language school; a bakery, a cleaning service, a vet clinic; a tyre service, a
# banquet hall, a print centre; a barbershop, a hardware store, a tutoring centre; a car wash,
# a water delivery service, a fitness club; a coffee roaster, a moving company, a curtain shop;
# a phone repair shop, a dry cleaner, a tour operator),
# written by authors who had not read the assistant's code or
# cases. docs/evaluation.md has their figures; these floors keep them from sliding back.
FIRST_SIGHT = ROOT / "assistant" / "eval" / "first_sight"


@pytest.mark.parametrize(
    ("folder", "min_price", "max_wrong_rate"),
    [
        ("set_a", 0.76, 0.04),
        ("set_b", 0.60, 0.10),
        ("set_c", 0.45, 0.12),
        ("set_d", 0.63, 0.05),
        ("set_e", 0.45, 0.06),
        ("set_f", 0.70, 0.06),
        ("set_g", 0.66, 0.10),
    ],
)
def test_the_first_sight_businesses_hold_their_measured_floor(folder, min_price, max_wrong_rate):
    golden = load_golden(FIRST_SIGHT / folder)
    assert len(golden.knowledge) == 3
    assert len(golden.cases) >= 80
    report = run(golden, None, "catalogue")
    assert report.price_accuracy >= min_price
    assert report.wrong_amount_rate <= max_wrong_rate
