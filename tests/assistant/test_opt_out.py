"""A customer who writes only "stop" (in English, Russian or Kazakh, or the business's own
words) goes on the business's opt-out register and gets one confirmation in their language,
with no prices; anything more than the keyword is an ordinary turn."""

from __future__ import annotations

import pytest

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.opt_out import CONFIRMATIONS
from assistant.turn import take_turn
from inbox.conversations import opt_outs
from inbox.conversations.models import Business, Chat, Message, OptOut, Turn
from tests import factories

pytestmark = pytest.mark.django_db

PRICES = "SKU,Name,Price,Currency,Unit\nCEM-400,Цемент М400,3200,KZT,мешок 50 кг\n"


def _customer_writes(business: Business, *texts: str) -> tuple[Chat, Turn]:
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), business)
    chat = factories.chat(factories.channel(business))
    for text in texts:
        factories.customer_message(chat, text)
    Chat.objects.filter(pk=chat.pk).update(version=1)
    turn = take_turn(chat.pk)
    assert turn is not None
    return chat, turn


def _replies(chat: Chat) -> list[str]:
    return list(
        Message.objects.filter(chat=chat, direction=Message.Direction.OUTBOUND).values_list(
            "text", flat=True
        )
    )


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("STOP", "en"),
        ("Unsubscribe.", "en"),
        ("Отписаться", "ru"),
        ("не пишите мне!", "ru"),
        ("Хабарлама жібермеңіз", "kk"),
        ("жазбаңыз", "kk"),
    ],
)
def test_a_message_that_is_only_the_keyword_opts_out_and_is_confirmed_in_its_language(
    text: str, lang: str
) -> None:
    business = factories.business()

    chat, turn = _customer_writes(business, text)

    assert turn.outcome == Turn.Outcome.ANSWERED
    assert turn.reason == "opt_out"
    assert _replies(chat) == [CONFIRMATIONS[lang]]
    assert opt_outs.opted_out(business, chat.customer_key)
    row = OptOut.objects.get(business=business, customer_key=chat.customer_key)
    assert row.source == OptOut.Source.KEYWORD


def test_the_confirmation_quotes_no_prices() -> None:
    chat, _turn = _customer_writes(factories.business(), "стоп")

    (reply,) = _replies(chat)
    assert "3200" not in reply
    assert "3 200" not in reply
    assert "KZT" not in reply


def test_a_keyword_inside_a_question_is_an_ordinary_turn() -> None:
    business = factories.business()

    chat, turn = _customer_writes(business, "Stop, how much is cement М400?")

    assert turn.reason != "opt_out"
    assert not opt_outs.opted_out(business, chat.customer_key)


def test_a_business_with_its_own_words_uses_them_instead() -> None:
    business = factories.business(opt_out_keywords="Хватит\nbasta\n")

    chat, turn = _customer_writes(business, "BASTA!")
    other, other_turn = _customer_writes(business, "stop")

    assert turn.reason == "opt_out"
    assert opt_outs.opted_out(business, chat.customer_key)
    assert _replies(chat) == [CONFIRMATIONS["en"]]
    assert other_turn.reason != "opt_out"
    assert not opt_outs.opted_out(business, other.customer_key)


def test_cancel_is_about_the_order_not_an_opt_out() -> None:
    business = factories.business()

    chat, turn = _customer_writes(business, "Cancel")

    assert turn.reason != "opt_out"
    assert not opt_outs.opted_out(business, chat.customer_key)
