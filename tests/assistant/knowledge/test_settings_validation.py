"""The assistant settings page refuses malformed handoff reasons, forbidden promises and
business rules with a message per line, and keeps what was stored."""

from __future__ import annotations

import pytest
from django.test import Client

from assistant.knowledge.effective import assistant_settings
from tests import factories

pytestmark = pytest.mark.django_db


def _post(client: Client, **data: str) -> str:
    form = {"business_rules": "", "reasons_text": "complaint: unhappy", "promises_text": ""}
    form.update(data)
    return client.post("/inbox/settings/assistant/", form).content.decode()


def test_malformed_lines_are_refused_with_clear_messages() -> None:
    business = factories.business()
    client = Client()
    client.force_login(factories.manager(business, role="admin"))

    page = _post(
        client,
        reasons_text="wholesale orders over 50\nlate: too slow\nvip:\nvip2: big\nvip2: again",
        promises_text="ok\nfree delivery",
        business_rules="We offer free delivery in Almaty.",
    )

    assert "Line 1 (&quot;wholesale orders over 50&quot;) has no &quot;:&quot;" in page
    assert "&quot;late&quot; is a reason the system uses itself" in page
    assert "Line 3: &quot;vip&quot; has no description" in page
    assert "Line 5: &quot;vip2&quot; is already on line 4." in page
    assert "Line 1: &quot;ok&quot; is too short" in page
    assert "is also a forbidden promise" in page
    assert assistant_settings(business.pk).business_rules == ""  # nothing was saved


def test_a_valid_form_is_saved() -> None:
    business = factories.business()
    client = Client()
    client.force_login(factories.manager(business, role="admin"))
    answer = client.post("/inbox/settings/assistant/", {
        "business_rules": "Address customers formally.", "reasons_text": "vip: a big order",
        "promises_text": "free delivery"})  # fmt: skip
    assert answer.status_code == 302
    assert assistant_settings(business.pk).reason_codes() == ["vip"]
