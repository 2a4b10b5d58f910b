"""The contact panel shows a customer's opt-out, a manager clears it (kept with who did it) or
records one; the JSON API's chat carries `opted_out`. Only for the manager's own business."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from inbox.conversations import opt_outs
from inbox.conversations.models import OptOut
from inbox.web.api_tokens import create_token
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    return tenant("B")


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _panel(user: Any, chat_id: int) -> str:
    response = _client(user).get(f"/inbox/chat/{chat_id}/")
    assert response.status_code == 200
    html = response.content.decode()
    return html.split("data-contact-panel", 1)[1].split("</details>", 1)[0]


def _api_chat(user: Any, chat_id: int) -> Any:
    _, token = create_token(user, "tests")
    return Client().get(f"/api/v1/chats/{chat_id}", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_the_panel_shows_the_opt_out_and_the_manager_clears_it(a: Tenant) -> None:
    opt_outs.record(a.business.pk, a.chat.customer_key, OptOut.Source.KEYWORD)

    shown = _panel(a.manager, a.chat.pk)
    assert 'data-opt-out="on"' in shown
    assert "Opted out" in shown
    assert "Customer&#x27;s message" in shown or "Customer's message" in shown
    assert _api_chat(a.manager, a.chat.pk).json()["opted_out"] is True

    response = _client(a.manager).post(f"/inbox/chat/{a.chat.pk}/opt-out/", {"action": "clear"})

    assert response.status_code == 302
    assert 'data-opt-out="off"' in _panel(a.manager, a.chat.pk)
    assert not opt_outs.opted_out(a.business, a.chat.customer_key)
    row = OptOut.objects.get()
    assert row.cleared_by_id == a.manager.pk
    assert row.cleared_at is not None
    assert _api_chat(a.manager, a.chat.pk).json()["opted_out"] is False


def test_a_manager_records_an_opt_out_the_customer_asked_for_elsewhere(a: Tenant) -> None:
    _client(a.manager).post(f"/inbox/chat/{a.chat.pk}/opt-out/", {"action": "record"})

    assert 'data-opt-out="on"' in _panel(a.manager, a.chat.pk)
    assert OptOut.objects.get().source == OptOut.Source.MANAGER


def test_another_businesss_manager_can_neither_clear_nor_see_it(a: Tenant, b: Tenant) -> None:
    opt_outs.record(a.business.pk, a.chat.customer_key, OptOut.Source.PLATFORM)
    # B's own chat with the same customer key: A's register says nothing about it.
    b.chat.customer_key = a.chat.customer_key
    b.chat.save()

    refused = _client(b.manager).post(f"/inbox/chat/{a.chat.pk}/opt-out/", {"action": "clear"})

    assert refused.status_code == 404
    assert opt_outs.opted_out(a.business, a.chat.customer_key)
    assert _api_chat(b.manager, a.chat.pk).status_code == 404
    assert 'data-opt-out="off"' in _panel(b.manager, b.chat.pk)
    assert _api_chat(b.manager, b.chat.pk).json()["opted_out"] is False


def test_an_unknown_action_changes_nothing(a: Tenant) -> None:
    response = _client(a.manager).post(f"/inbox/chat/{a.chat.pk}/opt-out/", {"action": "x"})

    assert response.status_code == 400
    assert not OptOut.objects.exists()
