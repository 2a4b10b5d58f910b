"""A reply the guardrail cannot prove is not sent: the chat goes to a manager, whose handoff card
says what could not be proven and shows the reply that was stopped."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.turn import take_turn
from inbox.conversations.models import Chat, Handoff, Owner, Turn
from tests import factories
from tests.emulators.openai_server import Step

pytestmark = pytest.mark.django_db

PRICES = "SKU,Name,Price,Currency\nCH-101,Office chair Lux,45000,KZT\nCH-102,Kitchen chair Oak,28000,KZT\n"
WRONG_TOTAL = (
    "Office chair Lux: 45 000 KZT\n"
    "Kitchen chair Oak: 2 × 28 000 KZT = 56 000 KZT\n"
    "Total: 111 000 KZT"
)


def _blocked_turn(settings: Any, emu: Any, ui_language: str) -> tuple[Turn, Client]:
    """A real turn whose reply states a wrong total, of a business whose team reads
    `ui_language`, and a manager of that business signed in."""
    business = factories.business(ui_language=ui_language)
    channel = factories.channel(business)
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), business)
    chat = factories.chat(channel)
    factories.customer_message(chat, "Office chair Lux and 2 Kitchen chair Oak, total?")
    Chat.objects.filter(pk=chat.pk).update(version=1)
    settings.LLM_BASE_URL = emu.base_url
    emu.script(Step.decision(reply=WRONG_TOTAL))
    turn = take_turn(chat.pk)
    assert turn is not None
    manager = Client()
    manager.force_login(factories.manager(business))
    return turn, manager


def _card(manager: Client, turn: Turn) -> str:
    page = manager.get(f"/inbox/chat/{turn.chat_id}/").content.decode()
    return page[page.index('class="handoff-card"') :]


def _why(manager: Client, turn: Turn) -> str:
    assert turn.reply_message_id is not None  # the handoff notice sent instead of the reply
    url = f"/inbox/chat/{turn.chat_id}/messages/{turn.reply_message_id}/why/"
    return manager.get(url, HTTP_HX_REQUEST="true").content.decode()


def test_a_russian_team_reads_the_finding_and_the_proofs_in_russian(settings, emu):
    turn, manager = _blocked_turn(settings, emu, "ru")

    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "guardrail")
    finding = "итог 111 000 KZT не равен сумме строк выше (101 000 KZT)"
    assert turn.guardrail_findings == [finding]
    assert finding in _card(manager, turn)
    why = _why(manager, turn)
    assert finding in why
    assert "<strong>45 000 KZT</strong>: цена из прайс-листа для Office chair Lux" in why
    assert "not the sum" not in why
    assert "the list price" not in why
    handoff = Handoff.objects.get(chat_id=turn.chat_id)
    assert handoff.summary.startswith("Ответ ассистента остановлен проверкой")


def test_an_english_team_reads_the_same_finding_and_proofs_in_english(settings, emu):
    turn, manager = _blocked_turn(settings, emu, "en")

    finding = "total 111 000 KZT is not the sum of the lines above (101 000 KZT)"
    assert turn.guardrail_findings == [finding]
    why = _why(manager, turn)
    assert finding in why
    assert "<strong>45 000 KZT</strong>: the list price of Office chair Lux" in why


def test_a_wrong_total_is_handed_to_a_manager_with_the_finding_on_the_handoff_card(settings, emu):
    business = factories.business()
    channel = factories.channel(business)
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), business)
    chat = factories.chat(channel)
    factories.customer_message(chat, "Office chair Lux and 2 Kitchen chair Oak, total?")
    Chat.objects.filter(pk=chat.pk).update(version=1)
    settings.LLM_BASE_URL = emu.base_url
    emu.script(Step.decision(reply=WRONG_TOTAL))

    turn = take_turn(chat.pk)

    assert turn is not None
    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "guardrail")
    finding = "total 111 000 KZT is not the sum of the lines above (101 000 KZT)"
    assert turn.guardrail_findings == [finding]
    chat.refresh_from_db()
    assert chat.owner == Owner.PENDING_HUMAN
    assert not chat.messages.filter(text__contains="111 000").exists()  # never sent
    manager = Client()
    manager.force_login(factories.manager(business))
    page = manager.get(f"/inbox/chat/{chat.pk}/").content.decode()
    card = page[page.index('class="handoff-card"') :]
    assert finding in card
    assert "Total: 111 000 KZT" in card  # the reply that was stopped, for the manager to fix
