"""The Why panel of a bot message, the flag a manager leaves on it, the same facts in the JSON
API, and the flags on the Review page: what the assistant read, computed and checked, shown to
the business's own people only, with nothing anybody wrote rendered as HTML."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.turn import take_turn
from inbox.conversations.models import Chat, Message, MessageFlag, Turn
from inbox.web.api_tokens import create_token
from tests import factories
from tests.inbox.tenants import Tenant

pytestmark = pytest.mark.django_db

PRICES = (
    "SKU,Name,Price,Currency\n"
    "CH-101,Office chair Lux,45000,KZT\n"
    "CH-102,Kitchen chair Oak,28000,KZT\n"
)


def _answered(tenant: Tenant, text: str) -> Message:
    """The bot's reply of a real turn (the catalogue assistant) to `text` in the tenant's chat."""
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), tenant.business)
    chat = tenant.chat
    factories.customer_message(chat, text)
    Chat.objects.filter(pk=chat.pk).update(version=chat.version + 1)
    turn = take_turn(chat.pk)
    assert turn is not None
    assert turn.reply_message is not None
    return turn.reply_message


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _why_url(message: Message) -> str:
    return f"/inbox/chat/{message.chat_id}/messages/{message.pk}/why/"


def _flag_url(message: Message) -> str:
    return f"/inbox/chat/{message.chat_id}/messages/{message.pk}/flag/"


def _api(user: Any) -> tuple[Client, dict[str, str]]:
    _, token = create_token(user, "tests")
    return Client(), {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_the_why_panel_shows_what_was_read_computed_and_proven(a: Tenant) -> None:
    reply = _answered(a, "How much for 4 Office chair Lux?")
    assert reply.text == "Office chair Lux: 4 × 45 000 KZT = 180 000 KZT"
    manager = _client(a.manager)

    chat_page = manager.get(f"/inbox/chat/{a.chat.pk}/").content.decode()
    assert f'hx-get="{_why_url(reply)}"' in chat_page  # the "Why?" control on the bot reply

    panel = manager.get(_why_url(reply), HTTP_HX_REQUEST="true").content.decode()
    assert '<q class="why-asked">How much for 4 Office chair Lux?</q>' in panel
    assert 'Office chair Lux <span class="muted">(CH-101)</span> × 4' in panel
    assert "4 × 45 000 KZT = <strong>180 000 KZT</strong>" in panel
    assert "the price of Office chair Lux, × 4 as the customer asked" in panel
    assert "Catalogue assistant" in panel
    assert " ms" in panel
    assert 'name="category"' in panel
    assert "Wrong amount" in panel


def test_a_russian_team_reads_the_proofs_in_russian_while_the_customer_reads_english(
    a: Tenant,
) -> None:
    a.business.ui_language = "ru"
    a.business.save(update_fields=["ui_language"])
    reply = _answered(a, "How much for 4 Office chair Lux?")
    assert reply.text == "Office chair Lux: 4 × 45 000 KZT = 180 000 KZT"  # the customer's

    panel = _client(a.manager).get(_why_url(reply), HTTP_HX_REQUEST="true").content.decode()

    assert "<strong>45 000 KZT</strong>: цена Office chair Lux, × 4, как просил клиент" in panel
    assert "<strong>180 000 KZT</strong>: 4 × 45 000 KZT" in panel
    assert "as the customer asked" not in panel


def test_an_order_of_two_items_shows_each_line_the_total_and_how_the_total_was_proven(
    a: Tenant,
) -> None:
    reply = _answered(a, "Office chair Lux and 2 Kitchen chair Oak, total?")
    assert "101 000 KZT" in reply.text

    why = _client(a.manager).get(_why_url(reply)).content.decode()

    assert "2 × 28 000 KZT = <strong>56 000 KZT</strong>" in why
    assert "Total: <strong>101 000 KZT</strong>" in why
    assert "<strong>101 000 KZT</strong>: the sum of the lines above" in why


def test_another_business_gets_404_for_the_panel_the_flag_and_the_api(a: Tenant, b: Tenant) -> None:
    reply = _answered(a, "How much for 4 Office chair Lux?")
    stranger = _client(b.manager)

    assert stranger.get(_why_url(reply)).status_code == 404
    assert stranger.post(_flag_url(reply), {"category": "wrong_amount"}).status_code == 404
    # Their own chat's id with A's message id is no way in either.
    assert stranger.get(f"/inbox/chat/{b.chat.pk}/messages/{reply.pk}/why/").status_code == 404
    api, auth = _api(b.manager)
    path = f"/api/v1/chats/{a.chat.pk}/messages/{reply.pk}"
    assert api.get(f"{path}/why", **auth).status_code == 404
    answer = api.post(f"{path}/flag", {"category": "wrong_item"}, "application/json", **auth)
    assert answer.status_code == 404
    assert not MessageFlag.objects.exists()


def test_only_the_bots_messages_have_a_why(a: Tenant) -> None:
    customer = a.message
    assert _client(a.manager).get(_why_url(customer)).status_code == 404
    api, auth = _api(a.manager)
    answer = api.get(f"/api/v1/chats/{a.chat.pk}/messages/{customer.pk}/why", **auth)
    assert answer.status_code == 404


def test_nothing_anybody_wrote_is_rendered_as_html(a: Tenant) -> None:
    script = "<script>alert(1)</script>"
    question = factories.customer_message(a.chat, f"how much {script}")
    bot = Message.objects.create(
        chat=a.chat,
        channel=a.channel,
        direction=Message.Direction.OUTBOUND,
        author=Message.Author.BOT,
        text="A person will answer you shortly.",
    )
    Turn.objects.create(
        chat=a.chat,
        first_message_id=question.pk,
        last_message_id=question.pk,
        generated_at_version=1,
        outcome=Turn.Outcome.HANDED_OFF,
        backend="llm:primary",
        action="handoff",
        reason="guardrail",
        # A model echoes the customer's words into the facts and its reply.
        decision={
            "action": "answer",
            "reply_to_customer": f"Sure {script} 99 KZT",
            "facts": {"items": [{"name": f"chair {script}", "qty": 2.0}]},
        },
        guardrail_findings=[f"price 99 KZT is not the price of {script}"],
        reply_message=bot,
        latency_ms=812.4,
    )
    manager = _client(a.manager)
    manager.post(_flag_url(bot), {"category": "bad_wording", "note": f"note {script}"})

    panel = manager.get(_why_url(bot)).content.decode()
    review = _client(a.admin).get("/inbox/review/").content.decode()

    for html in (panel, review):
        assert script not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "how much &lt;script&gt;" in panel  # the customer's question
    assert "Language model (primary endpoint)" in panel
    assert "812 ms" in panel


def test_the_api_gives_the_same_facts_and_takes_a_flag(a: Tenant) -> None:
    reply = _answered(a, "How much for 4 Office chair Lux?")
    api, auth = _api(a.manager)
    path = f"/api/v1/chats/{a.chat.pk}/messages/{reply.pk}"

    why = api.get(f"{path}/why", **auth).json()
    flagged = api.post(
        f"{path}/flag", {"category": "wrong_amount", "note": "4 chairs are 170 000"},
        "application/json", **auth,
    )  # fmt: skip
    again = api.get(f"{path}/why", **auth).json()

    assert why["recorded"] is True
    # The turn answered both the tenant's earlier question and this one.
    assert why["asked"] == ["secret question of A", "How much for 4 Office chair Lux?"]
    assert why["action"] == "Answered"
    assert why["items"] == [{"item": "Office chair Lux", "sku": "CH-101", "qty": "4", "unit": ""}]
    assert why["lines"][0]["total"] == "180 000 KZT"
    assert {"amount": "180 000 KZT", "basis": "4 × 45 000 KZT"} in why["proofs"]
    assert why["backend"].startswith("Catalogue assistant")
    assert why["latency_ms"] is not None
    assert flagged.status_code == 201
    assert flagged.json()["category"] == "wrong_amount"
    assert [f["note"] for f in again["flags"]] == ["4 chairs are 170 000"]
    bad = api.post(f"{path}/flag", {"category": "nonsense"}, "application/json", **auth)
    assert bad.status_code == 422


def test_flags_are_on_the_review_page_by_category_for_the_businesss_admins_only(
    a: Tenant, b: Tenant
) -> None:
    reply = _answered(a, "How much for 4 Office chair Lux?")
    manager = _client(a.manager)
    answer = manager.post(
        _flag_url(reply), {"category": "wrong_amount", "note": "quoted the old price"},
        HTTP_HX_REQUEST="true",
    )  # fmt: skip
    assert answer.status_code == 200
    assert "Flagged." in answer.content.decode()

    review = _client(a.admin).get("/inbox/review/").content.decode()
    other = _client(b.admin).get("/inbox/review/").content.decode()

    group = review[review.index('data-category="wrong_amount"') :]
    assert "Wrong amount" in review
    assert "quoted the old price" in group
    assert f"/inbox/chat/{a.chat.pk}/#msg-{reply.pk}" in group
    assert "quoted the old price" not in other
