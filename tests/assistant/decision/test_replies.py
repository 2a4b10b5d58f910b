"""Customer-facing wording: every fixed sentence and every availability line reads once, in the
customer's language, with nothing said twice ("(on order, on order)")."""

from __future__ import annotations

import re
from string import Formatter

import pytest

from assistant.decision import catalogue
from assistant.decision.replies import TEXTS, availability_phrase, text
from assistant.models import AssistantSettings, Availability
from assistant.schema import Action
from tests.assistant.builders import item, knowledge, turn

NOTES = ("", "on order", "под заказ", "Под заказ 2 недели", "in stock", "есть", "yes", "нет",
         "out of stock", "2 weeks", "12", "ожидается поставка 10.03", "sold out", "бар",
         "жоқ", "тапсырыспен 5 күн")  # fmt: skip


def repeated(phrase: str) -> str | None:
    """A word or a run of words said twice in a row, or a clause said twice."""
    words = re.findall(r"\w+", phrase.lower())
    for size in (1, 2, 3):
        for i in range(len(words) - 2 * size + 1):
            if words[i : i + size] == words[i + size : i + 2 * size]:
                return " ".join(words[i : i + size])
    clauses = [c.strip() for c in re.split(r"[,;()]", phrase.lower()) if c.strip()]
    twice = {c for c in clauses if clauses.count(c) > 1}
    return next(iter(twice), None)


@pytest.mark.parametrize("key", sorted(TEXTS))
@pytest.mark.parametrize("lang", ["en", "ru", "kk"])
def test_every_fixed_sentence_fills_its_fields_and_says_nothing_twice(key, lang):
    fields = {name for _, name, _, _ in Formatter().parse(TEXTS[key]["en"]) if name}
    filled = text(key, lang, **{name: "Office chair Lux (45 000 KZT)" for name in fields})
    assert "{" not in filled
    assert "}" not in filled
    assert repeated(filled) is None, filled
    assert set(TEXTS[key]) >= {"en", "ru", "kk"}


@pytest.mark.parametrize("key", sorted(TEXTS))
def test_every_kazakh_sentence_keeps_the_fields_and_is_written_in_kazakh(key):
    def fields(template: str) -> set[str]:
        return {name for _, name, _, _ in Formatter().parse(template) if name}

    kk, ru = TEXTS[key]["kk"], TEXTS[key]["ru"]
    assert fields(kk) == fields(TEXTS[key]["en"])
    assert (kk == "") == (ru == "")
    assert kk != ru or kk == ""
    assert not re.search(r"[a-z]", re.sub(r"\{\w+\}", "", kk), re.IGNORECASE), kk


@pytest.mark.parametrize("status", [a.value for a in Availability])
@pytest.mark.parametrize("note", NOTES)
@pytest.mark.parametrize("lang", ["en", "ru", "kk"])
def test_every_availability_and_note_reads_once(status, note, lang):
    phrase = availability_phrase(status, note, lang)
    assert repeated(phrase) is None, phrase
    label = text(f"availability.{status}", lang)
    assert phrase.startswith(label)


@pytest.mark.parametrize("status", [a.value for a in Availability])
@pytest.mark.parametrize("note", NOTES)
def test_the_reply_a_customer_reads_never_doubles_the_status(status, note):
    shop = knowledge((item("T-1", "Oak dining table 160", "120000", availability=status,
                           availability_note=note),))  # fmt: skip
    for question in ("how much is the oak dining table 160?", "сколько стоит стол oak dining 160?"):
        d = catalogue.decide(turn(question), shop, AssistantSettings())
        assert d.action == Action.ANSWER
        assert repeated(d.reply_to_customer) is None, d.reply_to_customer


def test_on_order_with_a_note_that_repeats_it_keeps_only_what_the_note_adds():
    assert availability_phrase(Availability.ON_ORDER, "on order", "en") == "on order"
    assert availability_phrase(Availability.ON_ORDER, "под заказ 2 недели", "en") == (
        "on order, 2 недели"
    )
    assert availability_phrase(Availability.ON_ORDER, "Под заказ", "ru") == "под заказ"
    assert availability_phrase(Availability.ON_ORDER, "тапсырыс бойынша", "kk") == "тапсырыспен"
    assert availability_phrase(Availability.IN_STOCK, "қоймада бар", "kk") == "қоймада бар"
