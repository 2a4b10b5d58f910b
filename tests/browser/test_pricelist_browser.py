"""The price-list admin in a real browser on the live stack: upload a file, read the worker's
preview as money and words with its diff against the current list (old → new), apply it,
then roll back to the first version in one click; the history keeps all three."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.models import PriceList
from tests.browser.support import DESKTOP, PHONE, csp_violations, logged_in, shot
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

NBSP = "\u00a0"
FIRST = b"sku,name,price,currency,in stock\nT-1,Oak table,32000,KZT,yes\nC-2,Chair,9000,KZT,no\n"
SECOND = b"sku,name,price,currency,in stock\nT-1,Oak table,35000,KZT,yes\nL-3,Lamp,4000,KZT,5\n"


def _upload(page: Any, base: str, data: bytes, name: str) -> None:
    expect = sync_api.expect
    page.goto(f"{base}/inbox/settings/price-list/")
    page.set_input_files("#id_file", {"name": name, "mimeType": "text/csv", "buffer": data})
    page.click("form[enctype] button[type=submit]")
    # The worker reads the file; the page polls and swaps the preview in (no reload).
    expect(page.locator('[data-upload-state="ready"]')).to_be_visible()


def test_preview_diff_apply_and_rollback(browser: Any, stack: str, people: dict[str, Any]) -> None:
    expect = sync_api.expect
    page = logged_in(browser, stack, "anna", viewport=DESKTOP)

    _upload(page, stack, FIRST, "first.csv")
    preview = page.locator('[data-upload-state="ready"]')
    expect(preview).to_contain_text(f"32{NBSP}000{NBSP}₸")
    expect(preview).to_contain_text("Out of stock")
    expect(preview).to_contain_text("every row is new")
    page.click('[data-action="apply-price-list"]')
    expect(page.locator(".messages, body")).to_contain_text("Applied version 1")

    _upload(page, stack, SECOND, "second.csv")
    diff = page.locator("#price-diff")
    expect(diff.locator('[data-diff="added"]')).to_have_text("1")
    expect(diff.locator('[data-diff="removed"]')).to_have_text("1")
    changed = diff.locator('[data-diff-table="changed"] tbody tr')
    expect(changed).to_contain_text(f"32{NBSP}000{NBSP}₸")
    expect(changed).to_contain_text(f"→ 35{NBSP}000{NBSP}₸")
    expect(diff.locator('[data-diff-table="removed"]')).to_contain_text("Chair")
    shot(page, "pricelist-diff-1366")
    page.set_viewport_size(PHONE)
    shot(page, "pricelist-diff-390")
    page.set_viewport_size(DESKTOP)
    page.click('[data-action="apply-price-list"]')
    expect(page.locator("body")).to_contain_text("Applied version 2")

    page.click('[data-action="restore-version"][data-version="1"]')
    # Nothing changes until the admin has seen what the rollback does and confirmed it.
    expect(page.locator("h1")).to_contain_text("Roll back to version 1?")
    expect(page.locator('[data-diff="changed"], [data-diff="removed"]').first).to_be_visible()
    assert PriceList.objects.get(business=people["business"]).current_version.number == 2  # type: ignore[union-attr]
    page.click('[data-action="confirm-restore"]')
    expect(page.locator("body")).to_contain_text("version 3 is a copy of version 1")
    expect(page.locator("[data-version-current]")).to_have_count(1)

    def restored() -> bool:
        price_list = PriceList.objects.get(business=people["business"])
        current = price_list.current_version
        return bool(current and current.number == 3 and current.restored_from is not None)

    wait_for(restored, timeout=10, interval=0.2, message="version 3, a copy of version 1")
    names = list(
        PriceList.objects.get(business=people["business"]).current_version.items.values_list(
            "name", flat=True
        )  # type: ignore[union-attr]
    )
    assert names == ["Oak table", "Chair"]
    assert csp_violations == []
    page.context.close()
