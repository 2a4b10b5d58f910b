"""The JSON API: tokens, the same permissions as the inbox, and the manager actions."""

from __future__ import annotations

import logging
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from inbox.conversations import ownership, reading, status
from inbox.conversations.models import ApiToken, Chat, HandoffReason, Message, Owner
from inbox.web.api_tokens import create_token, hash_token
from tests import factories
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    return tenant("B")


class Api:
    def __init__(self, user: Any) -> None:
        _, self.token = create_token(user, "tests")
        self.client = Client()

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(f"/api/v1{path}", params, HTTP_AUTHORIZATION=f"Bearer {self.token}")

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.client.post(
            f"/api/v1{path}", body or {}, content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {self.token}",
        )  # fmt: skip


def test_requests_without_a_valid_token_are_refused(a: Tenant) -> None:
    client = Client()
    assert client.get("/api/v1/chats").status_code == 401
    assert client.get("/api/v1/chats", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    row, token = create_token(a.manager)
    ApiToken.objects.filter(pk=row.pk).update(is_active=False)
    assert client.get("/api/v1/chats", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401


@pytest.mark.parametrize("header", ["{token}", "Token {token}", "bearer{token}", "Basic {token}"])
def test_a_token_sent_without_bearer_is_refused_and_never_logged(
    a: Tenant, header: str, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """django-ninja logs an unexpected Authorization header whole when DEBUG is on (make run)."""
    settings.DEBUG = True
    _, token = create_token(a.manager)
    with caplog.at_level(logging.DEBUG):
        response = Client().get("/api/v1/chats", HTTP_AUTHORIZATION=header.format(token=token))
    assert response.status_code == 401
    assert token not in caplog.text
    assert token[-12:] not in caplog.text


def test_only_the_hash_is_stored_and_the_command_prints_the_token_once(a: Tenant) -> None:
    out, err = StringIO(), StringIO()
    call_command("create_api_token", a.manager.username, "--name", "crm", stdout=out, stderr=err)
    token = out.getvalue().strip()

    row = ApiToken.objects.get(name="crm")
    assert row.token_hash == hash_token(token)
    assert token not in str(ApiToken.objects.filter(pk=row.pk).values().get())
    assert Client().get("/api/v1/chats", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
    assert ApiToken.objects.get(pk=row.pk).last_used_at is not None


def test_list_chats_with_filters_and_tenant_scope(a: Tenant, b: Tenant) -> None:
    waiting = factories.chat(a.channel, customer_name="Waiting one")
    ownership.request_human(waiting.pk, reason=HandoffReason.ASKS_FOR_HUMAN)
    api = Api(a.manager)

    everything = api.get("/chats").json()
    pending = api.get("/chats", owner="pending_human").json()
    recent = api.get("/chats", updated_since="2000-01-01T00:00:00Z").json()
    other_channel = api.get("/chats", channel=b.channel.pk).json()

    assert {c["customer_name"] for c in everything} == {"Customer A", "Waiting one"}
    assert [c["id"] for c in pending] == [waiting.pk]
    assert {c["id"] for c in recent} == {a.chat.pk, waiting.pk}
    assert other_channel == []
    assert api.get("/chats", owner="nonsense").status_code == 422


def test_one_chat_with_messages_and_handoff(a: Tenant, b: Tenant) -> None:
    Message.objects.create(
        chat=a.chat, channel=a.channel, direction="out", author="bot", text="Hi!",
        from_me=True, sent_by_bot=True, status="delivered",
    )  # fmt: skip
    api = Api(a.manager)

    detail = api.get(f"/chats/{a.chat.pk}").json()

    assert detail["owner"] == "bot"
    assert [(m["direction"], m["text"], m["sent_by_bot"]) for m in detail["messages"]] == [
        ("in", "secret question of A", False),
        ("out", "Hi!", True),
    ]
    assert detail["messages"][1]["status"] == "delivered"
    assert detail["handoff"]["reason"] == "outside_knowledge_base"
    assert api.get(f"/chats/{b.chat.pk}").status_code == 404
    assert api.get("/chats/99999999999").status_code == 404


def test_actions_follow_the_ownership_rules(a: Tenant, b: Tenant) -> None:
    api = Api(a.manager)
    colleague = factories.manager(a.business, username="colleague")

    taken = api.post(f"/chats/{a.chat.pk}/take-over").json()
    again = api.post(f"/chats/{a.chat.pk}/take-over").json()
    assigned = api.post(f"/chats/{a.chat.pk}/assign", {"user_id": colleague.pk}).json()
    replied = api.post(f"/chats/{a.chat.pk}/reply", {"text": "On my way", "idempotency_key": "r1"})
    retried = api.post(f"/chats/{a.chat.pk}/reply", {"text": "On my way", "idempotency_key": "r1"})
    released = api.post(f"/chats/{a.chat.pk}/release").json()

    assert taken["changed"] is True
    assert taken["chat"]["owner"] == "human"
    assert again["changed"] is False
    assert "Already handled" in again["notice"]
    assert assigned["chat"]["assigned_to"] == colleague.pk
    assert replied.status_code == 200
    assert replied.json()["message_id"]
    assert retried.json()["changed"] is False
    assert Message.objects.filter(chat=a.chat, text="On my way").count() == 1
    assert released["chat"]["owner"] == "bot"
    for action in ("take-over", "release"):
        assert api.post(f"/chats/{b.chat.pk}/{action}").status_code == 404
    assert api.post(f"/chats/{b.chat.pk}/reply", {"text": "hi"}).status_code == 404
    assert Chat.objects.get(pk=b.chat.pk).owner == Owner.BOT
    assert not Message.objects.filter(chat=b.chat, text="hi").exists()


def test_reply_validation(a: Tenant) -> None:
    api = Api(a.manager)
    assert api.post(f"/chats/{a.chat.pk}/reply", {"text": ""}).status_code == 422
    assert api.post(f"/chats/{a.chat.pk}/reply", {"text": "x" * 5000}).status_code == 422
    nul = api.post(f"/chats/{a.chat.pk}/reply", {"text": "a\x00b"}).json()
    assert nul["error"]
    assert nul["changed"] is False


def test_handoffs_by_reason(a: Tenant, b: Tenant) -> None:
    from inbox.conversations.models import Handoff

    Handoff.objects.create(chat=a.chat, reason="guardrail", details={"blocked_reply": "x"})
    api = Api(a.manager)

    gaps = api.get("/handoffs", reason="outside_knowledge_base").json()
    blocked = api.get("/handoffs", reason="guardrail").json()

    assert [h["summary"] for h in gaps] == ["summary of A"]
    assert blocked[0]["details"] == {"blocked_reply": "x"}


def test_openapi_document_is_served() -> None:
    document = Client().get("/api/v1/openapi.json").json()
    assert document["openapi"].startswith("3.")
    assert "/api/v1/chats/{chat_id}/take-over" in document["paths"]
    assert "/api/v1/chats/{chat_id}/read" in document["paths"]
    assert "q" in {p["name"] for p in document["paths"]["/api/v1/chats"]["get"]["parameters"]}
    assert (
        "BearerAuth" in str(document["components"]["securitySchemes"])
        or document["components"]["securitySchemes"]
    )


def test_list_chats_searches_names_phones_and_text_in_every_status(a: Tenant, b: Tenant) -> None:
    credit = factories.chat(a.channel, customer_name="Dana")
    factories.customer_message(credit, "Можно оформить рассрочку?")
    status.resolve(credit.pk, manager=a.manager)
    english = factories.chat(a.channel, customer_name="Erlan")
    factories.customer_message(english, "When is the delivery?")
    factories.customer_message(b.chat, "рассрочку и delivery, пожалуйста")  # B's: never shown
    api = Api(a.manager)

    by_text = api.get("/chats", q="рассрочка").json()
    assert [(c["id"], c["status"]) for c in by_text] == [(credit.pk, "resolved")]
    assert [c["id"] for c in api.get("/chats", q="deliveries").json()] == [english.pk]
    assert [c["id"] for c in api.get("/chats", q="dana").json()] == [credit.pk]
    assert [c["id"] for c in api.get("/chats", q=a.chat.customer_phone).json()] == [a.chat.pk]
    assert api.get("/chats", q="рассрочка", status="open").json() == []
    assert api.get("/chats", q="of B").json() == []
    assert api.get("/chats", q="x" * 101).status_code == 422
    assert api.get("/chats", q="\x00").status_code == 422
    assert {c["id"] for c in api.get("/chats", q="  ").json()} == {
        a.chat.pk, credit.pk, english.pk,
    }  # fmt: skip


def test_list_chats_search_pages_like_the_list(a: Tenant) -> None:
    for n in range(5):
        chat = factories.chat(a.channel, customer_name=f"Sofa buyer {n}")
        factories.customer_message(chat, "sofas")
    api = Api(a.manager)

    first = api.get("/chats", q="sofa", limit=3).json()
    rest = api.get("/chats", q="sofa", limit=3, offset=3).json()

    assert len(first) == 3
    assert len(rest) == 2
    assert len({c["id"] for c in first + rest}) == 5


def test_mark_read_clears_the_users_own_unread_count(a: Tenant, b: Tenant) -> None:
    factories.customer_message(a.chat, "are you there?")
    api, admin = Api(a.manager), Api(a.admin)
    assert api.get(f"/chats/{a.chat.pk}").json()["unread_count"] == 2

    read = api.post(f"/chats/{a.chat.pk}/read")

    assert read.status_code == 200
    assert (read.json()["id"], read.json()["unread_count"]) == (a.chat.pk, 0)
    assert api.get("/chats").json()[0]["unread_count"] == 0
    assert admin.get("/chats").json()[0]["unread_count"] == 2  # the other manager's stays
    assert api.post(f"/chats/{b.chat.pk}/read").status_code == 404
    assert api.post("/chats/999999999/read").status_code == 404
    assert reading.read_counts(a.manager.pk, [b.chat.pk])[b.chat.pk] == 0
