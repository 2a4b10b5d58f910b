"""The model path on the catalogue assistant's footing: the model reads the turn (intents, items
by SKU), code decides the handoff and computes every amount, and the guardrail proves the reply.

Each test is one turn end to end: a stored customer message, the model behind the OpenAI
emulator, `take_turn`, and what the customer got (or the handoff the manager sees)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import AssistantSettings
from assistant.turn import take_turn
from inbox.conversations.models import Chat, Message, Owner, Turn
from tests import factories
from tests.emulators.openai_server import Step

pytestmark = pytest.mark.django_db

PRICES = (
    "SKU,Name,Price,Currency,Unit\n"
    "CEM-400,Цемент М400,3200,KZT,мешок 50 кг\n"
    "GKL,Гипсокартон Knauf стеновой,2900,KZT,лист\n"
    "TILE,Плитка настенная белая,4200,KZT,м²\n"
)
ASKED = "30 мешков цемента и 15 листов гипсокартона, сколько всего?"
CEMENT_AND_DRYWALL = [
    {"sku": "CEM-400", "qty": 30, "unit": "мешок"},
    {"sku": "GKL", "qty": 15, "unit": "лист"},
]


def one_turn(
    settings: Any, emu: Any, asked: str, answer: Step, prices: str = PRICES, rules: str = ""
) -> tuple[Turn, Chat]:
    """The customer writes `asked`, the model answers `answer`: the finished turn and chat."""
    business = factories.business()
    channel = factories.channel(business)
    apply_price_list(parse_price_file(prices.encode(), "p.csv"), business)
    if rules:
        AssistantSettings.objects.create(business=business, business_rules=rules)
    chat = factories.chat(channel)
    factories.customer_message(chat, asked)
    Chat.objects.filter(pk=chat.pk).update(version=1)
    settings.LLM_BASE_URL = emu.base_url
    emu.script(answer)
    turn = take_turn(chat.pk)
    assert turn is not None
    chat.refresh_from_db()
    return turn, chat


def sent(turn: Turn) -> str:
    """What the customer got from this turn (the reply or the handoff notice)."""
    return Message.objects.get(pk=turn.reply_message_id).text


def test_the_quote_placeholder_gets_lines_and_a_total_computed_from_the_reading(settings, emu):
    answer = Step.decision(
        reply="Вот расчёт:\n{quote}\nДоставка по городу есть.",
        reading={"intents": ["price_question"], "items": CEMENT_AND_DRYWALL},
    )
    turn, _chat = one_turn(settings, emu, ASKED, answer)

    assert turn.outcome == Turn.Outcome.ANSWERED, turn.guardrail_findings
    assert sent(turn) == (
        "Вот расчёт:\n"
        "Цемент М400: 30 × 3 200 KZT = 96 000 KZT\n"
        "Гипсокартон Knauf стеновой: 15 × 2 900 KZT = 43 500 KZT\n"
        "Итого: 139 500 KZT\n"
        "Доставка по городу есть."
    )


def test_a_clarify_with_a_complaint_in_the_reading_is_handed_off_as_a_complaint(settings, emu):
    answer = Step.decision(
        action="clarify",
        reason="ambiguous",
        reply="Уточните, пожалуйста, какой цемент вы имеете в виду?",
        summary="The customer is unhappy with the cement delivered.",
        reading={"intents": ["complaint"], "items": [{"sku": "CEM-400", "qty": 30}]},
    )
    turn, chat = one_turn(settings, emu, "Цемент привезли мокрый, я очень недоволен!", answer)

    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "complaint")
    assert chat.owner == Owner.PENDING_HUMAN
    assert (
        sent(turn) == "Нам очень жаль. Я передал ваше сообщение менеджеру, он скоро ответит здесь."
    )


def test_a_denied_request_for_a_manager_is_answered_not_handed_off(settings, emu):
    answer = Step.decision(
        reply="{quote}",
        reading={
            "intents": ["asks_for_human", "price_question"],
            "negated": ["asks_for_human"],
            "items": [{"sku": "CEM-400", "qty": 30, "unit": "мешок"}],
        },
    )
    asked = "Менеджер не нужен, просто скажите цену за 30 мешков цемента"
    turn, chat = one_turn(settings, emu, asked, answer)

    assert turn.outcome == Turn.Outcome.ANSWERED, turn.guardrail_findings
    assert chat.owner != Owner.PENDING_HUMAN
    assert sent(turn) == "Цемент М400: 30 × 3 200 KZT = 96 000 KZT"


def test_a_model_handoff_for_a_reason_the_customer_denied_is_answered_by_the_quote(settings, emu):
    answer = Step.decision(
        action="handoff",
        reason="asks_for_human",
        reply="Передаю вас менеджеру.",
        reading={"negated": ["asks_for_human"], "items": [{"sku": "GKL", "qty": 15}]},
    )
    asked = "Менеджер не нужен. 15 листов гипсокартона сколько?"
    turn, _chat = one_turn(settings, emu, asked, answer)

    assert turn.outcome == Turn.Outcome.ANSWERED, turn.guardrail_findings
    assert sent(turn) == "Гипсокартон Knauf стеновой: 15 × 2 900 KZT = 43 500 KZT"


def test_an_sku_not_in_the_list_is_never_quoted(settings, emu):
    answer = Step.decision(
        reply="{quote}",
        reading={
            "intents": ["price_question"],
            "items": [{"sku": "CEM-400", "qty": 30}, {"sku": "CEM-500", "qty": 10}],
        },
    )
    asked = "30 мешков цемента М400 и 10 мешков М500, сколько?"
    turn, _chat = one_turn(settings, emu, asked, answer)

    assert turn.outcome == Turn.Outcome.ANSWERED, turn.guardrail_findings
    assert sent(turn) == "Цемент М400: 30 × 3 200 KZT = 96 000 KZT"
    assert "М500" not in sent(turn)


def test_a_quote_of_nothing_in_the_list_goes_to_a_manager(settings, emu):
    answer = Step.decision(
        reply="{quote}", reading={"items": [{"sku": "BRICK-1", "qty": 500, "unit": "шт"}]}
    )
    turn, _chat = one_turn(settings, emu, "500 кирпичей сколько будет?", answer)

    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "outside_knowledge_base")
    assert "{quote}" not in sent(turn)


def test_a_clarify_whose_items_all_resolve_is_answered(settings, emu):
    answer = Step.decision(
        action="clarify",
        reason="ambiguous",
        reply="Какой именно гипсокартон вам нужен?",
        reading={"intents": ["price_question"], "items": [{"sku": "GKL", "qty": 15}]},
    )
    turn, _chat = one_turn(settings, emu, "15 листов гипсокартона Knauf сколько?", answer)

    assert turn.outcome == Turn.Outcome.ANSWERED, turn.guardrail_findings
    assert sent(turn) == "Гипсокартон Knauf стеновой: 15 × 2 900 KZT = 43 500 KZT"


def test_an_old_style_decision_without_a_reading_is_sent_as_the_model_wrote_it(settings, emu):
    old = {
        "action": "answer",
        "reason": "",
        "summary": "",
        "reply_to_customer": "Цемент М400: 3 200 KZT за мешок. {quote} остаётся как есть.",
        "facts": {"name": None, "city": None, "items": []},
    }
    answer = Step.reply(json.dumps(old, ensure_ascii=False))
    turn, _chat = one_turn(settings, emu, "Сколько стоит цемент?", answer)

    assert turn.outcome == Turn.Outcome.ANSWERED, turn.guardrail_findings
    assert sent(turn) == "Цемент М400: 3 200 KZT за мешок. {quote} остаётся как есть."


def test_a_quantity_blind_total_from_the_model_is_stopped_by_the_guardrail(settings, emu):
    blind = "Цемент 3 200 ₸, гипсокартон 2 900 ₸, итого 6 100 ₸"
    answer = Step.reply(
        json.dumps(
            {"action": "answer", "reason": "", "summary": "", "reply_to_customer": blind},
            ensure_ascii=False,
        )
    )
    turn, chat = one_turn(settings, emu, "30 мешков цемента и 15 листов гипсокартона", answer)

    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "guardrail")
    assert chat.owner == Owner.PENDING_HUMAN
    assert not chat.messages.filter(text__contains="6 100").exists()  # never sent
    assert "6 100" not in sent(turn)


def test_the_customers_own_quantities_beat_the_ones_the_model_read(settings, emu):
    # The model read one of each; the customer wrote 30 bags and 15 sheets.
    answer = Step.decision(
        reply="{quote}",
        reading={
            "intents": ["price_question"],
            "items": [{"sku": "CEM-400", "qty": 1}, {"sku": "GKL", "qty": 1}],
        },
    )
    turn, _chat = one_turn(settings, emu, ASKED, answer)

    assert turn.outcome == Turn.Outcome.ANSWERED, turn.guardrail_findings
    assert "30 × 3 200 KZT = 96 000 KZT" in sent(turn)
    assert "Итого: 139 500 KZT" in sent(turn)


def test_a_complaint_code_reads_is_handed_off_even_when_the_model_answers(settings, emu):
    answer = Step.decision(
        reply="Цемент М400 стоит {quote}",
        reading={"intents": ["price_question"], "items": [{"sku": "CEM-400", "qty": 3}]},
    )
    turn, chat = one_turn(
        settings, emu, "привезли цемент, три мешка рваные, кто будет возмещать?", answer
    )

    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "complaint")
    assert chat.owner == Owner.PENDING_HUMAN


def test_the_model_path_prices_a_party_with_children_at_the_rules_rate(settings, emu):
    """The model names the trip; code counts the adults and gives the child the rules' rate."""
    trips = "SKU,Name,Price,Currency,Unit\nLAKE,Большое Алматинское озеро,12000,KZT,чел\n"
    answer = Step.decision(
        reply="{quote}",
        reading={"intents": ["price_question"], "items": [{"sku": "LAKE", "qty": 3}]},
    )
    asked = "2 взрослых и ребёнок 8 лет на озеро, сколько всего?"
    turn, _chat = one_turn(settings, emu, asked, answer, trips, "Дети 5–12 лет — скидка 30%.")

    assert turn.outcome == Turn.Outcome.ANSWERED, turn.guardrail_findings
    assert sent(turn) == (
        "Большое Алматинское озеро: 2 × 12 000 KZT = 24 000 KZT\n"
        "Большое Алматинское озеро, ребёнок, возраст 8: 12 000 KZT, со скидкой 30%: 8 400 KZT\n"
        "Итого: 32 400 KZT"
    )
