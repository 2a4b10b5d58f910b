"""Auto-assignment of chats that start waiting for a human: round robin over online members
under their cap, only for a business that turned it on."""

from __future__ import annotations

from typing import Any

import pytest

from inbox.conversations import online, ownership
from inbox.conversations.models import Business, Chat, Membership, Owner
from tests import factories
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def a() -> Tenant:
    t = tenant("A")
    # The tenant's own admin and manager stay offline unless a test says otherwise.
    Business.objects.filter(pk=t.business.pk).update(auto_assign=True)
    return t


def _online(t: Tenant, *users: Any) -> None:
    for user in users:
        online.socket_open([t.business.pk], user.pk, f"socket-{user.pk}")


def _hand_off(t: Tenant, channel: Any = None) -> Chat:
    chat = factories.chat(channel or t.channel)
    ownership.request_human(chat.pk, reason="ready_to_buy")
    chat.refresh_from_db()
    assert chat.owner == Owner.PENDING_HUMAN
    return chat


def _assignees(t: Tenant, n: int) -> list[str | None]:
    chats = [_hand_off(t) for _ in range(n)]
    return [c.assigned_to.username if c.assigned_to else None for c in chats]


def test_off_by_default() -> None:
    t = tenant("Z")
    assert t.business.auto_assign is False
    _online(t, t.manager)
    assert _assignees(t, 1) == [None]


def test_round_robin_over_online_members_only(a: Tenant) -> None:
    second = factories.manager(a.business, username="manager-a2")
    factories.manager(a.business, username="manager-a3")  # offline
    _online(a, a.manager, second)
    assert _assignees(a, 4) == ["manager-a", "manager-a2", "manager-a", "manager-a2"]


def test_a_member_at_their_cap_is_skipped_until_a_chat_closes(a: Tenant) -> None:
    second = factories.manager(a.business, username="manager-a2")
    Membership.objects.filter(user=a.manager).update(chat_cap=1)
    _online(a, a.manager, second)
    first, *rest = _assignees(a, 3)
    assert [first, *rest] == ["manager-a", "manager-a2", "manager-a2"]
    # Released chats no longer count against the cap.
    held = Chat.objects.get(assigned_to=a.manager, owner=Owner.PENDING_HUMAN)
    ownership.release(held.pk, manager=a.manager)
    assert _assignees(a, 1) == ["manager-a"]


def test_cap_zero_means_never_and_a_full_team_leaves_the_chat_waiting(a: Tenant) -> None:
    Membership.objects.filter(user=a.manager).update(chat_cap=0)
    _online(a, a.manager)
    assert _assignees(a, 1) == [None]


def test_nobody_online_leaves_the_chat_unassigned(a: Tenant) -> None:
    assert _assignees(a, 1) == [None]


def test_a_member_who_closed_their_page_is_offline(a: Tenant) -> None:
    _online(a, a.manager)
    online.socket_closed([a.business.pk], a.manager.pk, f"socket-{a.manager.pk}")
    assert _assignees(a, 1) == [None]


def test_a_manager_limited_to_another_channel_does_not_get_the_chat(a: Tenant) -> None:
    branch = factories.channel(a.business, name="Branch")
    Membership.objects.get(user=a.manager).channels.set([branch])
    second = factories.manager(a.business, username="manager-a2")
    _online(a, a.manager, second)
    assert _assignees(a, 2) == ["manager-a2", "manager-a2"]
    assert _hand_off(a, branch).assigned_to == a.manager


def test_only_members_of_the_chats_business_are_candidates(a: Tenant) -> None:
    b = tenant("B")
    _online(b, a.manager)  # online in B's inbox, not A's
    _online(a, b.manager)  # even a presence entry under A's key is not membership
    assert _assignees(a, 1) == [None]


def test_a_socket_whose_heartbeat_stopped_expires(a: Tenant, redis_client: Any) -> None:
    """A server killed without disconnects: its sockets stop counting after the TTL."""
    _online(a, a.manager)
    assert online.online_user_ids(a.business.pk) == {a.manager.pk}
    key = online.online_key(a.business.pk)
    redis_client.zadd(key, {f"{a.manager.pk}:socket-{a.manager.pk}": 1.0})  # expired long ago
    assert online.online_user_ids(a.business.pk) == set()
    assert _assignees(a, 1) == [None]
