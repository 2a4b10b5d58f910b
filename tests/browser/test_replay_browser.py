"""An admin tries a new price list on past chats in a real browser: start the replay from the
price list preview, watch its progress arrive without a reload, read the report, apply it."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.knowledge import price_upload
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import PriceList, ReplayRun
from assistant.turn import take_turn
from inbox.conversations.models import Chat
from tests import factories
from tests.browser.support import PHONE, csp_violations, in_thread, logged_in, shot
from tests.emulators.graph_api import GraphApiEmulator
from tests.emulators.openai_server import OpenAIEmulator, Step, decision_json

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

PRICES = (
    "SKU,Name,Price,Currency\nCH-101,Office chair Lux,45000,KZT\nSF-301,Sofa Milano,310000,KZT\n"
)
NEW_PRICES = "SKU,Name,Price,Currency\nCH-101,Office chair Lux,49000,KZT\n"


def _seed(people: dict[str, Any]) -> None:
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), people["business"])
    for text in ("How much is the Office chair Lux?", "What does the Sofa Milano cost?"):
        chat = factories.chat(people["channel"], customer_phone="77011234567")
        factories.customer_message(chat, text)
        Chat.objects.filter(pk=chat.pk).update(version=1)
        in_thread(take_turn, chat.pk)


def _answer_slowly(request: Any) -> Step:
    """The candidate model: the new chair price, a handoff for the sofa that is gone."""
    asked = str(request.body["messages"][-1]["content"]).splitlines()[-1]
    if "Sofa" in asked:
        answer = decision_json(action="handoff", reason="outside_knowledge_base",
                               reply="A manager will answer you shortly.")  # fmt: skip
    else:
        answer = decision_json(reply="Office chair Lux: 49 000 KZT")
    return Step.slow(1.5, content=answer)


def test_start_progress_report_apply(
    stack: str, browser: Any, graph: GraphApiEmulator, people: dict[str, Any]
) -> None:
    expect = sync_api.expect
    _seed(people)
    staged = price_upload.stage(NEW_PRICES.encode(), "new.csv", "KZT",
                                business_id=people["business"].pk, channel_id=None,
                                user=people["anna"])  # fmt: skip
    with OpenAIEmulator() as model:
        # A slow candidate model, so that the progress is there to be seen.
        model.responder = _answer_slowly
        page = logged_in(browser, stack, "anna")
        page.goto(f"{stack}/inbox/settings/price-list/?upload={staged.token}")
        page.click("[data-action=replay-price-list]")
        expect(page.locator("[data-replay-staged]")).to_contain_text("new.csv")
        page.fill("#id_model_base_url", model.base_url)
        page.fill("#id_model_name", "assistant")
        page.click("[data-action=start-replay]")

        progress = page.locator("[data-replay-progress]")
        expect(progress).to_be_visible()
        expect(progress).to_contain_text("of 2 turns")
        shot(page, "replay-progress-1366")
        expect(page.locator("[data-replay-summary]")).to_be_visible(timeout=60_000)

    expect(page.locator("[data-group=changed_amount]")).to_have_attribute("data-count", "1")
    expect(page.locator("[data-group=changed_decision]")).to_have_attribute("data-count", "1")
    chair_row = page.locator("[data-change=changed_amount]")
    expect(chair_row).to_contain_text("45 000 KZT: proven by the guardrail")
    expect(chair_row).to_contain_text("49 000 KZT: proven by the guardrail")
    expect(page.locator("[data-replay-model-note]")).to_be_visible()
    expect(page.locator("body")).not_to_contain_text("77011234567")  # masked
    shot(page, "replay-report-1366")
    page.set_viewport_size(PHONE)
    shot(page, "replay-report-390")

    page.click("[data-action=apply-replay]")

    expect(page.locator(".flash-success")).to_contain_text("Applied price list version 2")
    expect(page.locator(".flash-success")).to_contain_text(f"model assistant at {model.base_url}")
    current = PriceList.objects.get(business=people["business"], channel=None).current_version
    assert current is not None
    assert current.number == 2
    assert [(i.name, str(i.price)) for i in current.items.all()] == [
        ("Office chair Lux", "49000.00")
    ]
    assert ReplayRun.objects.get().status == ReplayRun.Status.APPLIED
    assert not [m for m in graph.sent if "49 000" in m.text]  # the replay sent nothing
    # The applied model is the business's own now, shown (never its key) on Assistant settings.
    page.goto(f"{stack}/inbox/settings/assistant/")
    expect(page.locator("#id_model-model_base_url")).to_have_value(model.base_url)
    expect(page.locator("#id_model-model_api_key")).to_have_value("")
    shot(page, "replay-applied-model-390")
    assert not csp_violations
