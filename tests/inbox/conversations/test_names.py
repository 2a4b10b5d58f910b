"""The name a business shows of a member (inbox/conversations/names.py): their own name until a
display name is chosen, per business, written only through team.set_display_name."""

from __future__ import annotations

import pytest

from inbox.conversations import lifecycle, names, ownership, team
from inbox.conversations.models import ChatTransition, Membership
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_default_is_the_first_and_last_name_else_the_username() -> None:
    business = factories.business()
    user = factories.manager(business, username="admin")
    assert names.display_name(user, business.pk) == "admin"
    user.first_name, user.last_name = "Aigerim", "Bekova"
    user.save()
    assert names.display_name(user, business.pk) == "Aigerim Bekova"
    assert names.display_name(None, business.pk, "Assistant") == "Assistant"


def test_a_display_name_is_per_business() -> None:
    shop, salon = factories.business("Shop"), factories.business("Salon")
    user = factories.manager(shop, username="admin")
    Membership.objects.create(user=user, business=salon)

    shown = team.set_display_name(Membership.objects.get(user=user, business=shop), "  Айгерим ")

    assert shown == "Айгерим"
    assert names.display_name(user, shop.pk) == "Айгерим"
    assert names.display_name(user, salon.pk) == "admin"
    team.set_display_name(Membership.objects.get(user=user, business=shop), "")
    assert names.display_name(user, shop.pk) == "admin"


def test_a_display_name_too_long_or_with_control_characters_is_refused() -> None:
    business = factories.business()
    membership = Membership.objects.get(user=factories.manager(business))
    for bad in ("x" * (names.MAX_LENGTH + 1), "Anna\u200eadmin\x07"):
        with pytest.raises(team.TeamError):
            team.set_display_name(membership, bad)
    assert Membership.objects.get(pk=membership.pk).display_name == ""


@pytest.mark.django_db(transaction=True)
def test_the_audit_history_names_the_manager_by_display_name() -> None:
    chat = factories.chat()
    user = factories.manager(chat.channel.business, username="admin")
    team.set_display_name(Membership.objects.get(user=user), "Айгерим")
    ownership.take_over(chat.pk, manager=user)
    lifecycle.resolve(chat.pk, manager=user)
    labels = set(ChatTransition.objects.filter(chat=chat).values_list("actor_label", flat=True))
    assert labels == {"Айгерим"}
