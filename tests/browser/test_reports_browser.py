"""The reports page in a real browser: its charts drawn at desktop and phone widths, no CSP
violation (inline SVG with classes only), and a manager kept out."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from inbox.conversations.models import Business, Channel, Handoff, Message
from tests import factories
from tests.browser.support import DESKTOP, PHONE, csp_violations, in_thread, logged_in, shot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


def seed_handoffs(business_id: int) -> None:
    """Three days of handoffs on a WhatsApp number (sandbox chats are not counted): three
    reasons, so the line chart has three lines."""
    now = timezone.now()
    channel = factories.channel(
        Business.objects.get(pk=business_id), kind=Channel.Kind.BRIDGE, name="Shop number"
    )
    for n, reason in enumerate(["asks_for_human", "asks_for_human", "complaint", "guardrail"]):
        chat = factories.chat(channel)
        factories.customer_message(chat, f"question {n}")
        handoff = Handoff.objects.create(chat=chat, reason=reason)
        Handoff.objects.filter(pk=handoff.pk).update(created_at=now - timedelta(days=n % 3))
        Message.objects.filter(chat=chat).update(created_at=now - timedelta(days=n % 3))


def test_the_reports_page_draws_its_charts_at_both_widths(
    stack: str, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    in_thread(seed_handoffs, people["channel"].business_id)
    for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        page = logged_in(browser, stack, "anna", viewport=viewport)
        page.goto(f"{stack}/inbox/reports/")
        expect(page.locator("[data-figure=handoffs] .tile-value")).to_have_text("4")
        bars = page.locator("#reasons svg.chart-bars")
        expect(bars).to_be_visible()
        expect(bars.locator("rect")).to_have_count(3)
        expect(page.locator("#days svg.chart-lines polyline")).to_have_count(3)
        # The CSS classes colour the bars: the fill comes from reports.css, not an inline style.
        fill = bars.locator("rect").first.evaluate("r => getComputedStyle(r).fill")
        assert fill not in ("", "none", "rgb(0, 0, 0)")
        box = bars.bounding_box()
        assert box is not None
        assert box["width"] <= viewport["width"]
        shot(page, f"reports-{name}")
        page.context.close()

    boris = logged_in(browser, stack, "boris")
    response = boris.goto(f"{stack}/inbox/reports/")
    assert response is not None
    assert response.status == 403
    boris.context.close()
    assert csp_violations == []
