"""Times on the business's clock: a manager whose laptop is set to another zone still reads the
shop's time on every message (the page's script must not re-render times in the browser's
zone)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from inbox.conversations.models import Business, Chat, Message
from tests import factories
from tests.browser.support import csp_violations, in_thread, logged_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

SHOP_ZONE = "Asia/Almaty"
LAPTOP_ZONE = "America/Los_Angeles"


def test_message_times_are_the_business_clock_not_the_browser_s(
    stack: str, people: dict[str, Any], browser: Any
) -> None:
    def prepare() -> tuple[int, str]:
        business = people["business"]
        Business.objects.filter(pk=business.pk).update(timezone=SHOP_ZONE)
        chat = factories.chat(people["channel"], customer_name="Clock customer")
        message = factories.customer_message(chat, "What time is it there?")
        sent = timezone.now() - timedelta(minutes=3)
        Message.objects.filter(pk=message.pk).update(created_at=sent)
        Chat.objects.filter(pk=chat.pk).update(last_message_at=sent)
        return chat.pk, sent.astimezone(ZoneInfo(SHOP_ZONE)).strftime("%H:%M")

    chat_id, shop_time = in_thread(prepare)
    page = logged_in(browser, stack, "anna", timezone_id=LAPTOP_ZONE)
    assert page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone") == LAPTOP_ZONE
    page.goto(f"{stack}/inbox/chat/{chat_id}/")
    times = page.locator(f"#chat-row-{chat_id} time.row-time")
    sync_api.expect(times.first).to_be_visible()
    shown = times.first.inner_text()
    assert shop_time in shown.replace(".", ":"), (shown, shop_time)
    page.context.close()
    assert csp_violations == []
