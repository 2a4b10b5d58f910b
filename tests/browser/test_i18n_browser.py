"""A Russian-speaking manager's inbox has no English in its menu, the chat's header and the reply
box (inbox/web/local_language.py, locale/ru)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from inbox.conversations.models import Membership
from tests import factories
from tests.browser.support import csp_violations, in_thread, logged_in, shot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

# Latin words the Russian page may show: product names and keyboard keys.
ALLOWED = {"WhatsApp", "Bitrix24", "CRM", "Enter", "Shift"}
LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def english_words(texts: list[str]) -> list[str]:
    return [word for text in texts for word in LATIN_WORD.findall(text) if word not in ALLOWED]


def test_a_russian_manager_s_inbox_has_no_english_in_menu_header_and_composer(
    stack: str, people: dict[str, Any], browser: Any
) -> None:
    def prepare() -> int:
        Membership.objects.filter(user=people["boris"]).update(ui_language="ru")
        chat = factories.chat(people["channel"], customer_name="Ольга")
        factories.customer_message(chat, "Здравствуйте, сколько стоит стол?")
        return chat.pk

    chat_id = in_thread(prepare)
    page = logged_in(browser, stack, "boris")
    page.goto(f"{stack}/inbox/chat/{chat_id}/")
    header = page.locator(f"#chat-header-{chat_id}")
    composer = page.locator(f"#composer-{chat_id}")
    sync_api.expect(header).to_be_visible()
    # The scripts' words too (static/inbox/live.js reads them from the page).
    sync_api.expect(page.locator("#live-status")).to_have_text("На связи")
    assert page.locator("html").get_attribute("lang") == "ru"

    texts = [
        page.locator("nav.topnav").inner_text(),
        page.locator(".menu-label").inner_text(),
        page.locator("#live-status").inner_text(),
        page.locator(".sound-toggle").inner_text(),
        page.locator(f"#history-{chat_id} summary").inner_text(),
        page.locator(".topbar-right button[type=submit]").inner_text(),  # log out
        header.locator(".chat-sub a").inner_text(),
        header.locator("[data-owner-badge]").inner_text(),
        header.locator("[data-window]").inner_text(),
        *header.locator(".chat-actions button:visible").all_inner_texts(),
        header.locator("select[name=assignee] option[value='']").inner_text(),
        *header.locator("select[name=until] option").all_inner_texts(),
        *composer.locator("[data-composer-tab]").all_inner_texts(),
        composer.locator("[data-action=send]").inner_text(),
        composer.locator("textarea[name=text]").first.get_attribute("placeholder") or "",
        composer.locator(".composer-hint").inner_text(),
        page.locator("#filter-q").get_attribute("placeholder") or "",
        *page.locator(".view-tab").all_inner_texts(),
    ]
    assert "Чаты" in texts[0]
    assert "Взять чат" in " ".join(texts)
    assert english_words(texts) == [], texts
    shot(page, "i18n-inbox-ru")
    page.context.close()
    assert csp_violations == []
