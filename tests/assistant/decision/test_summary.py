"""The handoff card keeps the request: the items and quantities, the terms asked, the complaint,
the bot's last quote and why, in the customer's language; on the model path the model's summary
is kept only when it names the items it read."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from assistant.decision import catalogue, escalation, model_reading, summary
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import AssistantSettings
from assistant.schema import Action, Decision, Reading, WantedItem
from assistant.turn import take_turn
from inbox.conversations.models import Chat, Handoff, Turn
from tests import factories
from tests.assistant.builders import FURNITURE, entry, item, knowledge, turn
from tests.emulators.openai_server import Step

CONFIG = AssistantSettings()
SOFA = item("SF-302", "Диван угловой Бостон", "250000", unit="шт")
BED = item("BD-501", "Кровать Сканди 160x200", "180000")
LIST = knowledge((*FURNITURE, SOFA, BED))


def decide(*messages: str, history: list[Any] | None = None) -> Decision:
    return catalogue.decide(turn(*messages, history=history), LIST, CONFIG)


def test_a_discount_request_keeps_its_size_the_item_and_the_quantity_with_its_unit():
    d = decide("скидка 20% на диван бостон 3 шт")
    assert (d.action, d.reason) == (Action.HANDOFF, "non_standard_terms")
    assert d.summary.startswith("Клиент просит особые условия: 3 шт × Диван угловой Бостон;")
    assert "скидка 20%" in d.summary
    assert "«скидка 20% на диван бостон 3 шт»" in d.summary


def test_a_percentage_is_never_shown_as_a_quantity():
    d = decide("скидка 20% на 3 дивана бостон будет?")
    assert d.summary.startswith(
        "Клиент просит особые условия: 3 шт × Диван угловой Бостон; скидка 20%."
    )
    assert "20 шт" not in d.summary
    assert "«скидка 20% на 3 дивана бостон будет?»" in d.summary


def test_an_english_discount_request_is_summarised_in_english():
    d = decide("Any discount if I take 10 kitchen chairs? 15% maybe")
    assert d.reason == "non_standard_terms"
    assert d.summary.startswith("The customer asks for special terms: 10 × Kitchen chair Oak;")
    assert "discount 15%" in d.summary


def test_a_russian_speaking_team_reads_the_card_in_russian_whatever_the_customer_writes():
    english = turn("Any discount if I take 10 kitchen chairs? 15% maybe")
    d = catalogue.decide(replace(english, team_language="ru"), LIST, CONFIG)
    assert d.reply_to_customer.startswith("A manager")  # the customer still reads English
    assert d.summary.startswith("Клиент просит особые условия: 10 × Kitchen chair Oak;")
    assert "«Any discount if I take 10 kitchen chairs? 15% maybe»" in d.summary


def test_a_complaint_about_a_damaged_item_names_the_item_and_the_refund():
    d = decide("Кровать привезли со сломанной ножкой, верните деньги")
    assert d.reason == "complaint"
    assert d.summary.startswith("Жалоба: 1 × Кровать Сканди 160x200; хочет возврат.")
    assert "сломанной ножкой" in d.summary

    en = decide("The bed arrived damaged, I want a refund")
    assert en.reason == "complaint"
    assert en.summary.startswith("Complaint: 1 × Кровать Сканди 160x200; wants a refund")


def test_a_delivery_to_a_named_city_and_address_is_on_the_card():
    d = decide("I'm from Astana, I want to order 2 office chairs, deliver to Kenesary 40 tomorrow")
    assert d.reason == "ready_to_buy"
    assert "2 × Office chair Lux" in d.summary
    assert "address: Kenesary 40" in d.summary
    assert "when: tomorrow" in d.summary

    ru = decide("Хочу купить кресло Комфорт, доставка в Алматы, оплачу каспи")
    assert ru.reason == "ready_to_buy"
    assert "1 × Кресло офисное Комфорт" in ru.summary
    assert "город: Almaty" in ru.summary
    assert "оплата: каспи" in ru.summary


def test_a_two_item_order_lists_both_and_what_the_bot_already_quoted():
    history = [
        entry("customer", "сколько стоят 2 кухонных стула и стол 160?", 1),
        entry(
            "bot",
            "Kitchen chair Oak: 2 × 28 000 KZT = 56 000 KZT (в наличии)\n"
            "Oak dining table 160: 120 000 KZT (под заказ, 2 weeks)\nИтого: 176 000 KZT",
            2,
        ),
    ]
    d = decide("беру 2 кухонных стула и стол 160, привезите в субботу", history=history)
    assert d.reason == "ready_to_buy"
    assert d.summary.startswith(
        "Клиент хочет купить: 2 × Kitchen chair Oak; 1 × Oak dining table 160; когда: в субботу."
    )
    assert "Бот уже ответил: «" in d.summary
    assert "Итого: 176 000 KZT" in d.summary

    en = decide("I'll take 2 kitchen chairs and the oak table 160")
    assert "2 × Kitchen chair Oak; 1 × Oak dining table 160" in en.summary


def test_a_system_handoff_keeps_its_own_sentence_and_the_request():
    late = escalation.too_late(
        turn("рассрочка на 12 месяцев на диван бостон?"),
        waited=timedelta(minutes=90),
        cutoff=timedelta(minutes=30),
    )
    assert late is not None
    assert late.summary.startswith("The customer's message waited 90 min")
    assert "Запрос: рассрочка 12 мес." in late.summary
    assert "«рассрочка на 12 месяцев на диван бостон?»" in late.summary


def test_a_voice_note_not_understood_twice_is_told_in_the_customers_language():
    history = [
        entry("customer", "ди... бос...", 1, confidence=0.3),
        entry("bot", "Извините, не удалось разобрать голосовое сообщение. Повторите, "
              "пожалуйста, или напишите текстом.", 2),
    ]  # fmt: skip
    voice = turn("дивн... скльк", history=history, confidence=0.3)
    d = escalation.unclear_voice(voice, catalogue.decide(voice, LIST, CONFIG))
    assert d.reason == "voice_unclear"
    assert d.summary.startswith("Голосовое сообщение не разобрано дважды (0.30).")
    assert "«дивн... скльк»" in d.summary


# The model path: its summary kept when it names what it read, else the offline facts appended.

ASKED = "Хочу 3 дивана Бостон и 2 кресла Комфорт, со скидкой 10% можно?"
READ = Reading(
    intents=["non_standard_terms"],
    items=[WantedItem(sku="SF-302", qty=3), WantedItem(sku="KR-12", qty=2)],
)


def model_handoff(written: str, reading: Reading | None = READ) -> Decision:
    decision = Decision(
        action=Action.HANDOFF,
        reason="non_standard_terms",
        summary=written,
        reply_to_customer="Менеджер ответит по скидке.",
        reading=reading,
    )
    return model_reading.summarised(decision, turn(ASKED), LIST)


def test_a_model_summary_that_names_every_item_is_kept():
    written = "Клиент хочет скидку 10% на Диван угловой Бостон (3) и KR-12 (2)."
    assert model_handoff(written).summary == written


def test_a_model_summary_without_the_items_gets_them_appended():
    d = model_handoff("Клиент просит скидку.")
    assert d.summary.startswith("Клиент просит скидку. Клиент просит особые условия: ")
    assert "3 шт × Диван угловой Бостон" in d.summary
    assert "2 × Кресло офисное Комфорт" in d.summary
    assert "скидка 10%" in d.summary


def test_an_empty_model_summary_is_the_offline_one():
    d = model_handoff("")
    assert d.summary.startswith("Клиент просит особые условия: 3 шт × Диван угловой Бостон;")
    assert f"«{ASKED}»" in d.summary
    # Without a reading, the items code finds in the message are the ones to name.
    assert "Диван угловой Бостон" in model_handoff("Скидка?", reading=None).summary


def test_checked_appends_only_the_request_sentence():
    fallback = "Жалоба: 1 × Кровать Сканди 160x200. Клиент пишет: «сломана ножка»."
    wanted = [summary.Wanted("Кровать Сканди 160x200", sku="BD-501")]
    assert summary.checked("Сломана кровать BD-501.", fallback, wanted) == (
        "Сломана кровать BD-501."
    )
    assert summary.checked("Клиент недоволен.", fallback, wanted) == (
        "Клиент недоволен. Жалоба: 1 × Кровать Сканди 160x200."
    )


@pytest.mark.django_db
def test_the_handoff_card_carries_the_items_the_model_summary_dropped(settings, emu):
    """End to end: the model hands off with a vague summary; the manager's card names the
    items and the discount asked."""
    business = factories.business()
    channel = factories.channel(business)
    prices = "SKU,Name,Price,Currency,Unit\nSF-302,Диван угловой Бостон,250000,KZT,шт\n"
    apply_price_list(parse_price_file(prices.encode(), "p.csv"), business)
    chat = factories.chat(channel)
    factories.customer_message(chat, "скидка 20% на 3 дивана бостон будет?")
    Chat.objects.filter(pk=chat.pk).update(version=1)
    settings.LLM_BASE_URL = emu.base_url
    emu.script(
        Step.decision(
            action="handoff",
            reason="non_standard_terms",
            reply="Менеджер скоро ответит.",
            summary="Клиент спрашивает про скидку.",
            reading={"intents": ["non_standard_terms"], "items": [{"sku": "SF-302", "qty": 3}]},
        )
    )
    done = take_turn(chat.pk)
    assert done is not None
    assert done.outcome == Turn.Outcome.HANDED_OFF
    card = Handoff.objects.get(chat=chat)
    assert card.summary.startswith("Клиент спрашивает про скидку.")
    assert "3 шт × Диван угловой Бостон" in card.summary
    assert "скидка 20%" in card.summary
