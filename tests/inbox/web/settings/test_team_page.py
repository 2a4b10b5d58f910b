"""The Team page: admins only, their own business only, and removal that takes effect at once."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from inbox.conversations.models import Membership
from inbox.web.api_tokens import create_token
from tests import factories
from tests.inbox.tenants import PASSWORD, Tenant

pytestmark = pytest.mark.django_db
PAGE = "/inbox/settings/team/"


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _invite(client: Client, t: Tenant, **fields: Any) -> Any:
    data = {"username": "dana", "email": "dana@example.com", "role": "manager",
            "chat_cap": "", "delivery": "link", **fields}  # fmt: skip
    return client.post(f"{PAGE}?business={t.business.pk}", data)


def test_a_manager_cannot_open_or_post_to_the_team_page(a: Tenant) -> None:
    manager = _client(a.manager)
    membership = Membership.objects.get(user=a.admin)
    assert manager.get(PAGE).status_code == 403
    assert _invite(manager, a).status_code == 403
    assert manager.post(f"{PAGE}{membership.pk}/remove/").status_code == 403
    assert manager.post(f"{PAGE}auto-assign/?business={a.business.pk}").status_code == 403
    assert Membership.objects.filter(user=a.admin).exists()


def test_an_admin_sees_only_their_business_members(a: Tenant, b: Tenant) -> None:
    page = _client(a.admin).get(PAGE)
    assert page.status_code == 200
    assert b"manager-a" in page.content
    assert b"manager-b" not in page.content
    assert _client(a.admin).get(f"{PAGE}?business={b.business.pk}").status_code == 404


def test_an_admin_cannot_change_or_remove_another_business_member(a: Tenant, b: Tenant) -> None:
    admin = _client(a.admin)
    foreign = Membership.objects.get(user=b.manager)
    edit = admin.post(f"{PAGE}{foreign.pk}/", {f"m{foreign.pk}-role": "admin"})
    assert edit.status_code == 404
    assert admin.post(f"{PAGE}{foreign.pk}/remove/").status_code == 404
    foreign.refresh_from_db()
    assert foreign.role == "manager"
    assert get_user_model().objects.get(pk=b.manager.pk).is_active


def test_an_admin_cannot_restrict_a_manager_to_another_business_channel(
    a: Tenant, b: Tenant
) -> None:
    response = _invite(_client(a.admin), a, channels=[str(b.channel.pk)])
    assert response.status_code == 200
    assert not get_user_model().objects.filter(username="dana").exists()


def test_an_existing_username_is_not_taken_over(a: Tenant, b: Tenant) -> None:
    response = _invite(_client(a.admin), a, username="manager-b")
    assert b"is taken" in response.content
    assert not Membership.objects.filter(user=b.manager, business=a.business).exists()
    assert b"/accounts/reset/" not in response.content


def test_create_with_link_shows_a_link_that_works_once(a: Tenant) -> None:
    branch = factories.channel(a.business, name="Branch")
    page = _invite(_client(a.admin), a, channels=[str(branch.pk)], chat_cap="3")
    link = page.context["new_link"]
    membership = Membership.objects.get(user__username="dana")
    assert (membership.business, membership.chat_cap) == (a.business, 3)
    assert list(membership.channels.all()) == [branch]

    newcomer = Client()
    form = newcomer.get(urlsplit(link).path, follow=True)
    assert form.context["validlink"]
    newcomer.post(form.redirect_chain[-1][0], {"new_password1": "Quiet-Lake-42",
                                               "new_password2": "Quiet-Lake-42"})  # fmt: skip
    assert newcomer.login(username="dana", password="Quiet-Lake-42")
    assert newcomer.get(f"/inbox/chat/{a.chat.pk}/").status_code == 404  # not on Branch
    assert Client().get(urlsplit(link).path, follow=True).context["validlink"] is False


def test_invite_by_email_sends_the_link_and_does_not_show_it(
    a: Tenant, mailoutbox: list[Any]
) -> None:
    response = _invite(_client(a.admin), a, delivery="email")
    assert response.status_code == 302
    assert [m.to for m in mailoutbox] == [["dana@example.com"]]
    assert "/accounts/reset/" in mailoutbox[0].body
    follow = _client(a.admin).get(response["Location"])
    assert b"/accounts/reset/" not in follow.content


def test_removing_a_manager_logs_them_out_and_revokes_tokens_at_once(a: Tenant) -> None:
    victim = Client()
    assert victim.login(username="manager-a", password=PASSWORD)
    _, token = create_token(a.manager, "script")
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert Client().get("/api/v1/chats", **bearer).status_code == 200
    membership = Membership.objects.get(user=a.manager)

    response = _client(a.admin).post(f"{PAGE}{membership.pk}/remove/")

    assert response.status_code == 302
    assert victim.get("/inbox/").status_code == 302
    assert Client().get("/api/v1/chats", **bearer).status_code == 401


def test_an_admin_changes_role_channels_and_cap(a: Tenant) -> None:
    branch = factories.channel(a.business, name="Branch")
    membership = Membership.objects.get(user=a.manager)
    p = f"m{membership.pk}"
    _client(a.admin).post(
        f"{PAGE}{membership.pk}/",
        {f"{p}-role": "manager", f"{p}-channels": [str(branch.pk)], f"{p}-chat_cap": "2"},
    )
    membership.refresh_from_db()
    assert membership.chat_cap == 2
    assert list(membership.channels.all()) == [branch]
    assert _client(a.manager).get(f"/inbox/chat/{a.chat.pk}/").status_code == 404


def test_auto_assignment_is_off_until_the_admin_turns_it_on(a: Tenant, b: Tenant) -> None:
    assert a.business.auto_assign is False
    _client(a.admin).post(f"{PAGE}auto-assign/?business={a.business.pk}", {"auto_assign": "on"})
    a.business.refresh_from_db()
    b.business.refresh_from_db()
    assert a.business.auto_assign is True
    assert b.business.auto_assign is False
    # ?business= of another business is a 404, and changes neither business.
    foreign = _client(a.admin).post(
        f"{PAGE}auto-assign/?business={b.business.pk}", {"auto_assign": ""}
    )
    assert foreign.status_code == 404
    a.business.refresh_from_db()
    b.business.refresh_from_db()
    assert (a.business.auto_assign, b.business.auto_assign) == (True, False)


@pytest.mark.parametrize("delivery", ["link", "email"])
def test_a_username_with_markup_is_refused_on_the_page_not_a_server_error(
    a: Tenant, delivery: str
) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(a.admin)
    response = _invite(client, a, username='<img src=x onerror="alert(1)">', delivery=delivery)
    assert response.status_code == 200
    assert b"Enter a valid username" in response.content
    assert b"<img src=x" not in response.content  # the value shown back is escaped
    assert not get_user_model().objects.filter(username__startswith="<img").exists()
