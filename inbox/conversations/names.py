"""The name a business's team and its customers see of a member: the membership's display name,
else the user's first and last name, else the username.

Per membership (`Membership.display_name`, written by `inbox.conversations.team`), because a
user may work for several businesses and one business's admin renames no one in another. Every
place that names a manager (the inbox, presence, canned-reply signatures, the audit history, the
take-over notice) asks here, so a customer reads "Айгерим", never "admin".
"""

from __future__ import annotations

import time

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from inbox.conversations.models import Membership

MAX_LENGTH = 80
# The chosen names of a business, kept this long per process: the inbox names a manager on
# every row and message it renders (one query per page instead of one per row). A rename shows
# at once in the process that made it (`forget`), within this time in the others.
CACHE_SECONDS = 5.0
_chosen: dict[int, tuple[float, dict[int, str]]] = {}


def chosen(business_id: int) -> dict[int, str]:
    """The display names the members of a business chose, by user id (blank ones left out)."""
    now = time.monotonic()
    cached = _chosen.get(business_id)
    if cached is not None and now - cached[0] < CACHE_SECONDS:
        return cached[1]
    rows = Membership.objects.filter(business_id=business_id).exclude(display_name="")
    found = dict(rows.values_list("user_id", "display_name"))
    _chosen[business_id] = (now, found)
    return found


def forget(business_id: int) -> None:
    _chosen.pop(business_id, None)


def forget_all() -> None:
    _chosen.clear()


def default_name(user: AbstractBaseUser | AnonymousUser) -> str:
    """The user's own name where no display name is set: first/last name, else the username."""
    full = getattr(user, "get_full_name", lambda: "")()
    return str(full or user.get_username()).strip()


def display_name(
    user: AbstractBaseUser | AnonymousUser | None, business_id: int, fallback: str = ""
) -> str:
    """How the business names `user`; `fallback` for no user (the bot, the phone)."""
    if user is None:
        return fallback
    if user.pk is None:
        return default_name(user)
    return chosen(business_id).get(int(user.pk)) or default_name(user)


def of_membership(membership: Membership) -> str:
    """The name of a membership already loaded (with its user): no query."""
    return membership.display_name or default_name(membership.user)
