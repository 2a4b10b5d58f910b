"""The team: add_member / remove_member commands, and what removal does to logins and tokens."""

from __future__ import annotations

import io
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from inbox.conversations import assignment, team
from inbox.conversations.models import ApiToken, Membership, Owner
from inbox.web.api_tokens import create_token
from tests import factories
from tests.inbox.tenants import PASSWORD, Tenant, tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    return tenant("B")


def _run(command: str, *args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(command, *args, stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue().strip()


def test_add_member_creates_a_manager_limited_to_a_channel_with_a_one_time_link(a: Tenant) -> None:
    second = factories.channel(a.business, name="Branch")
    link, err = _run("add_member", "--business", "Business A", "--username", "dana", "--email",
                     "dana@example.com", "--role", "manager", "--channel", "Branch",
                     "--password-link")  # fmt: skip

    user = get_user_model().objects.get(username="dana")
    membership = Membership.objects.get(user=user)
    assert (membership.business, membership.role) == (a.business, "manager")
    assert list(membership.channels.all()) == [second]
    assert not user.has_usable_password()
    assert link.startswith("http://")
    assert "/accounts/reset/" in link
    assert "dana is now manager of Business A (Branch)" in err

    client = Client()
    page = client.get(urlsplit(link).path, follow=True)
    assert page.status_code == 200
    assert page.context["validlink"]
    done = client.post(page.redirect_chain[-1][0], {"new_password1": "Quiet-Lake-42",
                                                    "new_password2": "Quiet-Lake-42"})  # fmt: skip
    assert done.status_code == 302
    assert Client().login(username="dana", password="Quiet-Lake-42")
    again = Client().get(urlsplit(link).path, follow=True)
    assert again.context["validlink"] is False


def test_add_member_without_a_link_prints_no_secret(a: Tenant) -> None:
    out, err = _run("add_member", "--business", "Business A", "--username", "erlan",
                    "--email", "e@example.com", "--role", "admin")  # fmt: skip
    assert out == ""
    assert "erlan is now admin of Business A (all channels)" in err


def test_send_invite_mails_the_link(a: Tenant, mailoutbox: list[Any]) -> None:
    _run("add_member", "--business", "Business A", "--username", "farida", "--email",
         "farida@example.com", "--role", "manager", "--send-invite")  # fmt: skip
    assert [m.to for m in mailoutbox] == [["farida@example.com"]]
    assert "/accounts/reset/" in mailoutbox[0].body


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--business", "Nope"], "no business named 'Nope'"),
        (["--business", "Business A", "--channel", "Channel B"], "has no channel 'Channel B'"),
    ],
)
def test_add_member_refuses_unknown_business_and_another_business_channel(
    a: Tenant, b: Tenant, args: list[str], error: str
) -> None:
    with pytest.raises(CommandError, match=error):
        _run("add_member", "--username", "x", "--role", "manager", *args)
    assert not get_user_model().objects.filter(username="x").exists()


def test_an_existing_user_joins_a_second_business_from_the_command_line(
    a: Tenant, b: Tenant
) -> None:
    _run("add_member", "--business", "Business B", "--username", "manager-a", "--role", "manager")
    assert set(a.manager.memberships.values_list("business__name", flat=True)) == {
        "Business A",
        "Business B",
    }
    with pytest.raises(CommandError, match="already a member"):
        _run("add_member", "--business", "Business B", "--username", "manager-a",
             "--role", "manager")  # fmt: skip


def test_remove_member_only_touches_the_named_business(a: Tenant, b: Tenant) -> None:
    with pytest.raises(CommandError, match="not a member of Business B"):
        _run("remove_member", "--business", "Business B", "--username", "manager-a")
    with pytest.raises(CommandError, match="no business named"):
        _run("remove_member", "--business", "Nope", "--username", "manager-a")
    assert Membership.objects.filter(user=a.manager, business=a.business).exists()


def test_removing_a_sole_business_member_ends_their_sessions_and_tokens_at_once(a: Tenant) -> None:
    browser = Client()
    assert browser.login(username="manager-a", password=PASSWORD)
    assert browser.get("/inbox/").status_code == 200
    _, token = create_token(a.manager, "script")
    api = Client()
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert api.get("/api/v1/chats", **bearer).status_code == 200
    a.chat.owner = Owner.HUMAN
    a.chat.save()
    assignment.assign(a.chat.pk, a.manager.pk)

    out, _ = _run("remove_member", "--business", "Business A", "--username", "manager-a")

    assert "deactivated" in out
    assert "1 session(s) ended, 1 API token(s) revoked" in out
    assert browser.get("/inbox/").status_code == 302  # back to the login page
    assert api.get("/api/v1/chats", **bearer).status_code == 401
    a.chat.refresh_from_db()
    assert a.chat.assigned_to_id is None
    assert not Client().login(username="manager-a", password=PASSWORD)


def test_a_member_of_two_businesses_keeps_the_other_one(a: Tenant, b: Tenant) -> None:
    Membership.objects.create(user=a.manager, business=b.business)
    browser = Client()
    assert browser.login(username="manager-a", password=PASSWORD)
    _, token = create_token(a.manager)
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    removal = team.remove_member(a.business, a.manager.pk)

    assert (removal.membership_removed, removal.deactivated) == (True, False)
    assert browser.get(f"/inbox/chat/{a.chat.pk}/").status_code == 404
    assert browser.get(f"/inbox/chat/{b.chat.pk}/").status_code == 200
    api = Client()
    assert api.get(f"/api/v1/chats/{a.chat.pk}", **bearer).status_code == 404
    assert api.get(f"/api/v1/chats/{b.chat.pk}", **bearer).status_code == 200
    assert ApiToken.objects.get(user=a.manager).is_active


def test_the_last_admin_cannot_be_removed_or_demoted(a: Tenant) -> None:
    with pytest.raises(CommandError, match="needs at least one admin"):
        _run("remove_member", "--business", "Business A", "--username", "admin-a")
    membership = Membership.objects.get(user=a.admin)
    with pytest.raises(team.TeamError, match="needs at least one admin"):
        team.update_member(membership, role="manager", channels=[], chat_cap=None)
