"""brain.decide: the backend choice, the voice-confidence rule, and never failing a turn."""

from __future__ import annotations

import pytest

from assistant import brain
from assistant.price_import import apply_price_list, parse_price_file
from assistant.schema import Action
from tests import factories
from tests.assistant.builders import entry, turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def shop():
    biz = factories.business()
    channel = factories.channel(biz)
    csv = "SKU,Name,Price,Currency,Stock\nCH-101,Office chair Lux,45 000,KZT,yes\n"
    apply_price_list(parse_price_file(csv.encode(), "p.csv"), biz)
    return biz, channel


def shop_turn(shop, *messages, **kwargs):
    biz, channel = shop
    return turn(*messages, business_id=biz.pk, channel_id=channel.pk, **kwargs)


def test_without_llm_base_url_the_catalogue_answers_from_the_database(shop, settings):
    settings.LLM_BASE_URL = ""
    result = brain.decide(shop_turn(shop, "2 office chairs, how much?"))
    assert result.backend == "catalogue"
    assert result.model_error == ""
    assert result.decision.action == Action.ANSWER
    assert "2 × 45 000 KZT = 90 000 KZT" in result.decision.reply_to_customer
    assert result.latency_ms >= 0


def test_low_voice_confidence_asks_to_repeat_whatever_the_backend_says(shop, settings):
    settings.LLM_BASE_URL = ""
    result = brain.decide(shop_turn(shop, "two office chairs", confidence=0.31))
    decision = result.decision
    assert (decision.action, decision.reason) == (Action.CLARIFY, "voice_unclear")
    assert "repeat" in decision.reply_to_customer


def test_second_unclear_voice_in_a_row_goes_to_a_person(shop, settings):
    settings.LLM_BASE_URL = ""
    asked = brain.decide(shop_turn(shop, "ммм стул", confidence=0.2)).decision
    assert asked.reply_to_customer.startswith("Извините")
    history = [entry("customer", "ммм стул", 1, 0.2), entry("bot", asked.reply_to_customer, 2)]
    again = brain.decide(shop_turn(shop, "стул э", confidence=0.25, history=history)).decision
    assert (again.action, again.reason) == (Action.HANDOFF, "voice_unclear")


def test_confident_voice_is_answered_normally(shop, settings):
    settings.LLM_BASE_URL = ""
    result = brain.decide(shop_turn(shop, "office chair price", confidence=0.93))
    assert result.decision.action == Action.ANSWER
