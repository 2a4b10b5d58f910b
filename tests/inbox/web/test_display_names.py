"""Team names in the inbox: a member sets the name their business shows of them on their
profile, the business's admin on the Team page, nobody for another business; the inbox, the
take-over notice and canned-reply signatures use it."""

from __future__ import annotations

import json

import pytest

from inbox.conversations import assignment, ownership, team
from inbox.conversations.models import CannedReply, Membership, Message
from tests import factories
from tests.inbox.tenants import Tenant, tenant
from tests.inbox.web.test_dashboard_views import client_for, htmx

pytestmark = pytest.mark.django_db
PROFILE = "/inbox/settings/notifications/"
TEAM = "/inbox/settings/team/"


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    return tenant("B")


def _membership(t: Tenant, user: object) -> Membership:
    return Membership.objects.get(user=user, business=t.business)


def test_a_member_sets_their_own_name_per_business_and_no_one_elses(a: Tenant, b: Tenant) -> None:
    # The same person in both businesses: one name in each.
    both = Membership.objects.create(user=a.manager, business=b.business)
    mine = _membership(a, a.manager)
    page = client_for(a.manager).get(PROFILE).content.decode()
    assert f'name="{mine.pk}-display_name"' in page
    assert 'placeholder="manager-a"' in page

    client_for(a.manager).post(
        PROFILE, {f"{mine.pk}-display_name": "Айгерим", f"{both.pk}-display_name": ""}
    )
    assert _membership(a, a.manager).display_name == "Айгерим"
    assert Membership.objects.get(pk=both.pk).display_name == ""

    # Another member's membership id in the form changes nothing.
    theirs = _membership(b, b.manager)
    client_for(a.manager).post(PROFILE, {f"{theirs.pk}-display_name": "hijacked"})
    assert Membership.objects.get(pk=theirs.pk).display_name == ""


def test_the_admin_renames_a_member_of_their_business_only(a: Tenant, b: Tenant) -> None:
    membership = _membership(a, a.manager)
    p = f"m{membership.pk}"
    page = client_for(a.admin).get(f"{TEAM}?business={a.business.pk}").content.decode()
    assert f'name="{p}-display_name"' in page

    client_for(a.admin).post(
        f"{TEAM}{membership.pk}/", {f"{p}-role": "manager", f"{p}-display_name": "Айгерим"}
    )
    assert _membership(a, a.manager).display_name == "Айгерим"
    assert "Айгерим" in client_for(a.admin).get(TEAM).content.decode()

    foreign = _membership(b, b.manager)
    f = f"m{foreign.pk}"
    denied = client_for(a.admin).post(
        f"{TEAM}{foreign.pk}/", {f"{f}-role": "manager", f"{f}-display_name": "renamed"}
    )
    assert denied.status_code == 404
    assert (
        client_for(a.manager)
        .post(f"{TEAM}{membership.pk}/", {f"{p}-role": "manager", f"{p}-display_name": "self-made"})
        .status_code
        == 403
    )
    assert Membership.objects.get(pk=foreign.pk).display_name == ""
    assert _membership(a, a.manager).display_name == "Айгерим"


def test_the_canned_reply_signature_uses_the_display_name(a: Tenant) -> None:
    CannedReply.objects.create(
        business=a.business, title="Bye", text="Спасибо! С уважением, {manager_name}"
    )
    admin_user = factories.manager(a.business, username="admin")
    team.set_display_name(_membership(a, admin_user), "Айгерим")

    data = json.loads(client_for(admin_user).get(f"/inbox/chat/{a.chat.pk}/canned/").content)

    assert [r["text"] for r in data["replies"]] == ["Спасибо! С уважением, Айгерим"]


def test_the_inbox_names_the_assignee_and_the_take_over_winner_by_display_name(
    a: Tenant,
) -> None:
    team.set_display_name(_membership(a, a.manager), "Айгерим")
    ownership.take_over(a.chat.pk, manager=a.manager)
    assignment.assign(a.chat.pk, a.manager.pk)

    chat_page = client_for(a.admin).get(f"/inbox/chat/{a.chat.pk}/").content.decode()
    assert "Айгерим took this chat" in chat_page
    assert "Assigned to <strong>Айгерим</strong>" in chat_page
    assert 'class="row-assignee" title="Assigned to">→ Айгерим' in chat_page
    assert "data-handoff-assignee>Assigned to Айгерим<" in chat_page

    # Too late: the notice names the winner and sits outside the header, which the live
    # update replaces, so it stays until dismissed.
    answer = htmx(client_for(a.admin), f"/inbox/chat/{a.chat.pk}/take-over/").content.decode()
    header_end = answer.index("</header>")
    notice = answer[header_end:]
    assert f'id="chat-notice-{a.chat.pk}"' in notice
    assert 'hx-swap-oob="true"' in notice
    assert "Too late: Айгерим took this chat first." in notice
    assert 'data-action="dismiss-notice"' in notice
    assert "Too late" not in answer[:header_end]


def test_a_managers_message_is_labelled_with_their_display_name(a: Tenant) -> None:
    team.set_display_name(_membership(a, a.manager), "Айгерим")
    Message.objects.create(
        chat=a.chat, channel=a.channel, direction=Message.Direction.OUTBOUND,
        author=Message.Author.MANAGER, sent_by=a.manager, text="Здравствуйте!",
        provider_message_id="wamid.manager-label",
    )  # fmt: skip
    page = client_for(a.admin).get(f"/inbox/chat/{a.chat.pk}/").content.decode()
    assert '<span class="msg-author">Айгерим</span>' in page
    assert '<span class="msg-author">manager-a</span>' not in page
