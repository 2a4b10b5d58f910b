"""A bot reply waiting for approval, from the inbox and the JSON API: in place in the chat,
on the "To approve" list with the nav's count, and never across businesses."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from inbox.conversations import drafts
from inbox.conversations.models import Chat, Draft, Handoff, HandoffReason, Message, Owner
from inbox.web.api_tokens import create_token
from tests import factories
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    return tenant("B")


def _hold(t: Tenant, text: str = "The oak table is 120 000 KZT.") -> Draft:
    chat = Chat.objects.get(pk=t.chat.pk)
    held = drafts.hold(
        chat.pk, text, turn_id=None, generated_at_version=chat.version,
        answered_up_to=t.message.pk,
    )  # fmt: skip
    assert held.held
    return Draft.objects.get(pk=held.draft_id)


def _bot_texts(chat: Chat) -> list[str]:
    return list(
        Message.objects.filter(chat=chat, author=Message.Author.BOT).values_list("text", flat=True)
    )


def _browser(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_chat_shows_the_draft_and_approve_sends_it_in_place(a: Tenant) -> None:
    draft = _hold(a)
    page = _browser(a.manager)

    html = page.get(f"/inbox/chat/{a.chat.pk}/").content.decode()
    assert f'data-draft="{draft.pk}"' in html
    assert "The oak table is 120 000 KZT." in html
    assert 'data-count-url="/inbox/approve/count/">1</span>' in html  # the menu's count

    answer = page.post(
        f"/inbox/chat/{a.chat.pk}/draft/approve/", {"draft": draft.pk}, HTTP_HX_REQUEST="true"
    ).content.decode()

    assert "Sent to the customer." in answer
    assert "data-draft=" not in answer
    assert _bot_texts(a.chat) == ["The oak table is 120 000 KZT."]
    draft.refresh_from_db()
    assert (draft.state, draft.decided_by_id) == (Draft.State.APPROVED, a.manager.pk)


def test_edit_and_send_sends_the_managers_words(a: Tenant) -> None:
    draft = _hold(a)
    _browser(a.manager).post(
        f"/inbox/chat/{a.chat.pk}/draft/approve/",
        {"draft": draft.pk, "text": "The oak table is 110 000 KZT today."},
        HTTP_HX_REQUEST="true",
    )
    assert _bot_texts(a.chat) == ["The oak table is 110 000 KZT today."]
    assert Draft.objects.get(pk=draft.pk).state == Draft.State.EDITED


def test_reject_hands_the_chat_to_a_person(a: Tenant) -> None:
    draft = _hold(a)
    answer = _browser(a.manager).post(
        f"/inbox/chat/{a.chat.pk}/draft/reject/", {"draft": draft.pk}, HTTP_HX_REQUEST="true"
    )
    assert "waiting for a person" in answer.content.decode()
    assert _bot_texts(a.chat) == []
    assert Chat.objects.get(pk=a.chat.pk).owner == Owner.PENDING_HUMAN
    assert Handoff.objects.filter(chat=a.chat).first().reason == HandoffReason.REJECTED_DRAFT


def test_to_approve_lists_the_oldest_first_and_only_ones_own(a: Tenant, b: Tenant) -> None:
    older = _hold(a, "First: 120 000 KZT.")
    second_chat = factories.chat(a.channel, customer_name="Second customer")
    message = factories.customer_message(second_chat, "price?")
    drafts.hold(
        second_chat.pk, "Second: 80 000 KZT.", turn_id=None, generated_at_version=0,
        answered_up_to=message.pk,
    )  # fmt: skip
    _hold(b, "Other business: 5 000 KZT.")

    html = _browser(a.manager).get("/inbox/approve/").content.decode()

    assert html.index("First: 120 000 KZT.") < html.index("Second: 80 000 KZT.")
    assert "Other business" not in html
    assert 'data-count-url="/inbox/approve/count/">2</span>' in html
    assert _browser(a.manager).get("/inbox/approve/count/").json() == {"count": 2}
    assert _browser(b.manager).get("/inbox/approve/count/").json() == {"count": 1}
    # Another business's manager can neither see nor decide it.
    other = _browser(b.manager)
    assert other.post(f"/inbox/chat/{a.chat.pk}/draft/approve/").status_code == 404
    assert Draft.objects.get(pk=older.pk).state == Draft.State.PENDING


class Api:
    def __init__(self, user: Any) -> None:
        _, self.token = create_token(user, "tests")
        self.client = Client()

    def get(self, path: str) -> Any:
        return self.client.get(f"/api/v1{path}", HTTP_AUTHORIZATION=f"Bearer {self.token}")

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.client.post(
            f"/api/v1{path}", body or {}, content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {self.token}",
        )  # fmt: skip


def test_the_api_carries_the_draft_and_approves_it_with_an_edit(a: Tenant) -> None:
    _hold(a)
    api = Api(a.manager)

    draft = api.get(f"/chats/{a.chat.pk}").json()["draft"]
    assert draft["text"] == "The oak table is 120 000 KZT."
    assert draft["created_at"]

    answer = api.post(f"/chats/{a.chat.pk}/draft/approve", {"text": "Edited: 100 000 KZT."})
    assert answer.status_code == 200, answer.content
    assert answer.json()["state"] == Draft.State.EDITED
    assert _bot_texts(a.chat) == ["Edited: 100 000 KZT."]
    assert api.get(f"/chats/{a.chat.pk}").json()["draft"] is None
    # Nothing pending any more: 409.
    assert api.post(f"/chats/{a.chat.pk}/draft/approve").status_code == 409


def test_the_api_rejects_and_refuses_a_stale_draft(a: Tenant) -> None:
    _hold(a)
    api = Api(a.manager)
    answer = api.post(f"/chats/{a.chat.pk}/draft/reject")
    assert answer.status_code == 200
    assert answer.json()["state"] == Draft.State.REJECTED

    b_chat = factories.chat(a.channel)
    message = factories.customer_message(b_chat, "price?")
    drafts.hold(
        b_chat.pk, "80 000 KZT.", turn_id=None, generated_at_version=0, answered_up_to=message.pk
    )
    Chat.objects.filter(pk=b_chat.pk).update(version=1)  # a newer customer message
    assert api.get(f"/chats/{b_chat.pk}").json()["draft"] is None
    stale = api.post(f"/chats/{b_chat.pk}/draft/approve")
    assert stale.status_code == 409
    assert _bot_texts(b_chat) == []


def test_the_api_keeps_another_business_out(a: Tenant, b: Tenant) -> None:
    draft = _hold(a)
    api = Api(b.manager)
    assert api.post(f"/chats/{a.chat.pk}/draft/approve").status_code == 404
    assert api.post(f"/chats/{a.chat.pk}/draft/reject").status_code == 404
    assert api.get(f"/chats/{a.chat.pk}").status_code == 404
    assert Draft.objects.get(pk=draft.pk).state == Draft.State.PENDING
