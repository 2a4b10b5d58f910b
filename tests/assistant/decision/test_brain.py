"""brain.decide: the backend choice, the voice-confidence rule, and never failing a turn."""

from __future__ import annotations

import pytest

from assistant.decision import brain
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.schema import Action
from tests import factories
from tests.assistant.builders import entry, turn
from tests.emulators.openai_server import Step, refused_base_url

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


def test_llm_answer_goes_through_with_its_endpoint_name(shop, settings, emu):
    settings.LLM_BASE_URL = emu.base_url
    emu.script(Step.decision(reply="Office chair Lux: 45 000 KZT"))
    result = brain.decide(shop_turn(shop, "office chair?"))
    assert (result.backend, result.model_error) == ("llm:primary", "")
    assert result.decision.reply_to_customer == "Office chair Lux: 45 000 KZT"
    assert "Office chair Lux" in emu.chat_requests[0].messages[0]["content"]


def test_model_down_hands_off_politely_and_never_raises(shop, settings):
    settings.LLM_BASE_URL = refused_base_url()
    settings.LLM_FALLBACK_BASE_URL = refused_base_url()
    settings.LLM_MAX_RETRIES = 0
    result = brain.decide(shop_turn(shop, "Сколько стоит кресло?"))
    decision = result.decision
    assert (decision.action, decision.reason) == (Action.HANDOFF, "model_unavailable")
    assert decision.reply_to_customer == "Спасибо за сообщение! Менеджер скоро ответит вам здесь."
    assert result.backend == "fallback"
    assert "primary" in result.model_error
    assert "secondary" in result.model_error


def test_invalid_output_after_repair_hands_off_with_model_error(shop, settings, emu):
    settings.LLM_BASE_URL = emu.base_url
    emu.script(Step.not_json(), Step.not_json())
    result = brain.decide(shop_turn(shop, "office chair?"))
    assert (result.decision.action, result.decision.reason) == (Action.HANDOFF, "model_error")
    assert result.backend == "fallback"
    assert "not valid JSON" in result.model_error


def test_low_voice_confidence_overrides_the_model(shop, settings, emu):
    settings.LLM_BASE_URL = emu.base_url
    emu.script(Step.decision(action="handoff", reason="ready_to_buy", reply="A manager will call"))
    result = brain.decide(shop_turn(shop, "беру два кресла", confidence=0.2))
    assert (result.decision.action, result.decision.reason) == (Action.CLARIFY, "voice_unclear")
    assert result.backend == "llm:primary"


def test_model_handoff_without_a_message_gets_the_polite_default(shop, settings, emu):
    settings.LLM_BASE_URL = emu.base_url
    emu.script(Step.decision(action="handoff", reason="Asks For Human", reply=""))
    decision = brain.decide(shop_turn(shop, "manager please")).decision
    assert decision.reason == "asks_for_human"
    assert decision.reply_to_customer.startswith("Of course")


def test_redis_away_is_not_a_model_failure_the_turn_retries(shop, settings, emu):
    import redis

    from inbox.site.embedded_redis import free_port

    settings.LLM_BASE_URL = emu.base_url
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # breakers live in Redis
    with pytest.raises(redis.ConnectionError):
        brain.decide(shop_turn(shop, "office chair?"))
