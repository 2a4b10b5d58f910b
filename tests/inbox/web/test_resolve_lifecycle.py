"""Resolve from the inbox page and from the JSON API ends the manager's hold on the chat the
same way (both call inbox.conversations.lifecycle.resolve), the history says so in words, and
the business admin chooses where resolved chats go."""

from __future__ import annotations

import pytest

from inbox.conversations import assignment, ownership
from inbox.conversations.models import Business, Chat, ChatStatus, Owner
from tests.inbox.tenants import Tenant, tenant
from tests.inbox.web.test_api import Api
from tests.inbox.web.test_dashboard_views import client_for, htmx

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    return tenant("B")


def _held(t: Tenant) -> None:
    ownership.take_over(t.chat.pk, manager=t.manager)
    assignment.assign(t.chat.pk, t.manager.pk)


def _state(chat: Chat) -> tuple[str, str, int | None]:
    chat = Chat.objects.get(pk=chat.pk)
    return chat.status, chat.owner, chat.assigned_to_id


@pytest.mark.parametrize("where", ["inbox", "api"])
def test_resolve_gives_the_chat_back_to_the_bot_from_the_inbox_and_the_api(
    a: Tenant, where: str
) -> None:
    _held(a)
    if where == "inbox":
        header = htmx(client_for(a.manager), f"/inbox/chat/{a.chat.pk}/resolve/").content.decode()
        assert 'data-owner="bot"' in header
        assert "took this chat" not in header
    else:
        body = Api(a.manager).post(f"/chats/{a.chat.pk}/resolve").json()
        assert (body["chat"]["status"], body["chat"]["owner"]) == ("resolved", "bot")
    assert _state(a.chat) == (ChatStatus.RESOLVED, Owner.BOT, None)

    htmx(client_for(a.manager), f"/inbox/chat/{a.chat.pk}/reopen/")
    history = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/history/").content.decode()
    assert "Resolved: returned to the bot" in history
    assert "Reopened" in history


def test_the_admin_chooses_that_resolved_chats_wait_for_a_human(a: Tenant, b: Tenant) -> None:
    url = f"/inbox/settings/business/?business={a.business.pk}"
    page = client_for(a.admin).get(url).content.decode()
    assert "The chat waits for a human, nobody assigned" in page
    response = client_for(a.admin).post(
        url, {"timezone": "UTC", "language": "", "resolve_returns_to": "unassigned"}
    )
    assert response.status_code == 302
    # Neither a manager nor another business's admin may change it.
    assert client_for(a.manager).post(url, {"resolve_returns_to": "bot"}).status_code == 403
    assert client_for(b.admin).post(url, {"resolve_returns_to": "bot"}).status_code == 404
    assert Business.objects.get(pk=a.business.pk).resolve_returns_to == "unassigned"
    assert Business.objects.get(pk=b.business.pk).resolve_returns_to == "bot"

    _held(a)
    htmx(client_for(a.manager), f"/inbox/chat/{a.chat.pk}/resolve/")
    assert _state(a.chat) == (ChatStatus.RESOLVED, Owner.PENDING_HUMAN, None)
    # Nobody is asked to act on it until the customer writes: no waiting count in the title.
    assert 'data-pending="0"' in client_for(a.manager).get("/inbox/").content.decode()
    history = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/history/").content.decode()
    assert "Resolved: waits for a human" in history
