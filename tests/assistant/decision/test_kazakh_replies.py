"""A Kazakh customer, or a channel set to Kazakh, reads the assistant's fixed sentences in
Kazakh; Russian and English customers still read theirs; the decisions stay the same."""

from __future__ import annotations

import pytest

from assistant import language
from assistant.decision import brain
from assistant.decision.guardrails import check_against
from assistant.decision.replies import TEXTS, is_text, text
from assistant.models import AssistantSettings
from assistant.schema import Action, HistoryEntry, TurnInput
from tests.assistant.builders import entry, knowledge, turn

CONFIG = AssistantSettings()


def decide(t: TurnInput):
    return brain.decide_with(t, knowledge(), CONFIG, client=None).decision


@pytest.mark.parametrize(
    ("message", "lang"),
    [
        ("менеджермен сөйлесуге бола ма? маған қоңырау шалыңызшы", "kk"),
        ("позовите менеджера, пожалуйста", "ru"),
        ("I want to talk to a manager", "en"),
    ],
)
def test_the_handoff_notice_is_in_the_customers_language(message, lang):
    decision = decide(turn(message))
    assert (decision.action, decision.reason) == (Action.HANDOFF, "asks_for_human")
    assert decision.reply_to_customer == TEXTS["handoff.asks_for_human"][lang]


def test_the_managers_card_stays_russian_for_a_kazakh_chat():
    decision = decide(turn("менеджермен сөйлесуге бола ма? маған қоңырау шалыңызшы"))
    assert decision.summary.startswith("Клиент просит менеджера")


def test_a_kazakh_question_the_list_does_not_answer_is_asked_back_in_kazakh():
    decision = decide(turn("қайырлы таң! 🌸"))
    assert decision.action == Action.CLARIFY
    assert decision.reply_to_customer == TEXTS["clarify.miss"]["kk"]
    assert "Сізді қандай тауар қызықтырады?" in decision.reply_to_customer


@pytest.mark.parametrize(
    ("message", "total"),
    [
        ("маған 2 Office chair Lux және Стул барный Лофт керек, барлығы қанша?", "Жалпы: "),
        ("мне 2 Office chair Lux и Стул барный Лофт, сколько всего?", "Итого: "),
        ("2 office chairs lux and a bar stool loft, total?", "Total: "),
    ],
)
def test_the_total_line_is_in_the_customers_language_and_the_guardrail_reads_it(message, total):
    t = turn(message)
    decision = decide(t)
    assert decision.action == Action.ANSWER
    assert f"{total}122 000 KZT" in decision.reply_to_customer
    assert "2 × 45 000 KZT = 90 000 KZT" in decision.reply_to_customer
    assert check_against(decision, t, knowledge(), CONFIG).allowed


def test_a_kazakh_customer_reads_the_stock_in_kazakh():
    decision = decide(turn("Стул барный Лофт бар ма? бағасы қанша?"))
    assert decision.reply_to_customer == "Стул барный Лофт: 32 000 KZT (қоймада бар)"


@pytest.mark.parametrize("written", ["👍", "123", "🙂🙂"])
@pytest.mark.parametrize("channel", ["kk", "kk-KZ"])
def test_a_channel_set_to_kazakh_answers_a_message_without_letters_in_kazakh(written, channel):
    decision = decide(turn(written, language=channel))
    assert decision.reply_to_customer == TEXTS["clarify.miss"]["kk"]


def test_what_the_customer_writes_outweighs_the_channels_kazakh():
    decision = decide(turn("позовите менеджера", language="kk"))
    assert decision.reply_to_customer == TEXTS["handoff.asks_for_human"]["ru"]


def _voice_asked_again(bot_said: str) -> list[HistoryEntry]:
    # The customer's earlier message carries no confidence: only the bot's own words tell
    # that it already asked to repeat.
    return [entry("customer", "сәлем"), entry("bot", bot_said, 1)]


def test_a_kazakh_voice_note_not_understood_is_asked_again_in_kazakh():
    decision = decide(turn("ммм орындық қанша", confidence=0.2))
    assert (decision.action, decision.reason) == (Action.CLARIFY, "voice_unclear")
    assert decision.reply_to_customer == TEXTS["clarify.voice"]["kk"]


def test_after_the_bots_kazakh_re_ask_a_second_unclear_voice_note_goes_to_a_person():
    history = _voice_asked_again(TEXTS["clarify.voice"]["kk"])
    decision = decide(turn("ммм орындық қанша", confidence=0.2, history=history))
    assert (decision.action, decision.reason) == (Action.HANDOFF, "voice_unclear")
    assert decision.reply_to_customer == TEXTS["handoff.voice_unclear"]["kk"]
    # Another sentence of the bot's is no re-ask: the customer is asked once more.
    greeted = _voice_asked_again(TEXTS["answer.greeting"]["kk"])
    again = decide(turn("ммм орындық қанша", confidence=0.2, history=greeted))
    assert (again.action, again.reason) == (Action.CLARIFY, "voice_unclear")


def _picked(question: str, answer: str):
    asked = decide(turn(question))
    history = [entry("customer", question), entry("bot", asked.reply_to_customer, 1)]
    return asked, decide(turn(answer, history=history))


def test_the_answer_to_the_bots_kazakh_which_one_picks_the_option_as_in_russian():
    asked, picked = _picked("стул қайсысы бар? chair", "бірінші")
    assert asked.reply_to_customer.startswith("Нақтылаңызшы, қайсысы керек: ")
    assert " немесе " in asked.reply_to_customer
    assert is_text(asked.reply_to_customer, "clarify.ambiguous")
    asked_ru, picked_ru = _picked("какие стулья есть? chair", "первый")
    assert asked_ru.reply_to_customer.startswith("Уточните, пожалуйста, какой именно: ")
    assert picked.action == picked_ru.action == Action.ANSWER
    assert picked.reply_to_customer.replace("қоймада бар", "в наличии") == (
        picked_ru.reply_to_customer
    )


@pytest.mark.parametrize(
    ("written", "lang"),
    [
        ("Монтажная пена бар ма? 4 баллон керек", "kk"),  # two markers of six words
        ("Сәлеметсіз бе!", "kk"),
        ("Рахмет", "kk"),
        ("рахмет, керемет 🙏", "kk"),
        ("Ағашқа арналған саморез бір қорабы қанша тұрады?", "kk"),
        ("кофе машина керек, канша турады", "kk"),  # Kazakh typed with Russian letters
        ("Доставка в Өскемен сколько стоит?", "ru"),  # one marker
        ("салем, отбеливание зум сколько стоит? рахмет заранее", "ru"),  # greetings only
        ("Балаларға плавание бар ма? ребенку 6 лет, одно занятие в группе сколько?", "ru"),
        ("Сколько стоит диван?", "ru"),
        ("how much is the sofa?", "en"),
        ("bostan divan bar ma? bagasy qansha", "en"),  # Latin letters
    ],
)
def test_the_language_of_a_message(written, lang):
    assert language.customer_language([written], "ru") == lang


def test_a_kazakh_sentence_the_table_lacks_falls_back_to_russian_then_english(monkeypatch):
    monkeypatch.setitem(TEXTS, "test.only_ru", {"en": "Only English", "ru": "Только русский"})
    monkeypatch.setitem(TEXTS, "test.only_en", {"en": "Only English"})
    assert text("test.only_ru", "kk") == "Только русский"
    assert text("test.only_en", "kk") == "Only English"
    assert text("handoff.default", "kk-KZ") == TEXTS["handoff.default"]["kk"]


def test_speech_still_gets_the_channels_language_code():
    assert language.speech_code("kk-KZ") == "kk"
    assert language.supported("kk") == "kk"
    assert language.supported("de") == "en"
