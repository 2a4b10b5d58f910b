"""A business's team: adding members, changing their role and channels, removing them.

The Team page (`inbox/web/settings/`) and the `add_member` / `remove_member` commands call
these functions; nothing else writes `Membership`.

Removing a member from a business deletes that membership and unassigns their open chats
there. A user may belong to several businesses: API tokens and sessions belong to the user, not
to a business, so while other memberships remain they stay valid, and lose this business at
once because every request (and the websocket, within `consumers.VISIBILITY_TTL`) reads access
from the memberships. A user left with no membership is deactivated: `is_active=False`, every
session deleted, every API token revoked, all in the same transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.contrib.sessions.models import Session
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from inbox.conversations import assignment, names
from inbox.conversations.models import ApiToken, Business, Channel, Chat, Membership, Owner

log = logging.getLogger(__name__)


# Far above any manager's open chats, far below the column's limit (a 20-digit cap was a 500).
MAX_CHAT_CAP = 10_000


class TeamError(Exception):
    """A change the team rules do not allow; the message is meant for the admin."""


@dataclass(frozen=True)
class Removal:
    membership_removed: bool
    deactivated: bool
    sessions_deleted: int
    tokens_revoked: int
    chats_unassigned: int


def _check_channels(business: Business, channels: Sequence[Channel]) -> None:
    if any(channel.business_id != business.pk for channel in channels):
        raise TeamError("a channel of another business")


def _check_cap(chat_cap: int | None) -> None:
    if chat_cap is not None and chat_cap < 0:
        raise TeamError("the chat cap cannot be negative")
    if chat_cap is not None and chat_cap > MAX_CHAT_CAP:
        raise TeamError(f"the chat cap is at most {MAX_CHAT_CAP}")


def add_member(
    business: Business,
    *,
    username: str,
    email: str,
    role: str,
    channels: Sequence[Channel] = (),
    chat_cap: int | None = None,
    allow_existing_user: bool = False,
) -> Membership:
    """Make `username` a member of the business. A new user gets no usable password: they set
    one through `password_link`. An existing user is refused unless `allow_existing_user`
    (the operator's command line, never a business admin's page)."""
    if role not in Membership.Role.values:
        raise TeamError(f"unknown role {role!r}")
    _check_channels(business, channels)
    _check_cap(chat_cap)
    users = get_user_model()
    with transaction.atomic():
        user = users.objects.filter(username=username).first()
        if user is not None and not allow_existing_user:
            raise TeamError(f"the username {username!r} is taken; choose another")
        if user is None:
            user = users(username=username, email=email)
            try:
                user.full_clean(exclude=["password"])
            except ValidationError as exc:  # a username with markup, an address too long
                raise TeamError("; ".join(exc.messages)) from exc
            user.set_unusable_password()
            user.save()
        elif not user.is_active:
            # Someone removed from their last business and now taken back.
            users.objects.filter(pk=user.pk).update(is_active=True)
        if Membership.objects.filter(user=user, business=business).exists():
            raise TeamError(f"{username} is already a member of {business.name}")
        membership = Membership.objects.create(
            user=user, business=business, role=role, chat_cap=chat_cap
        )
        membership.channels.set(channels)
    log.info(
        "team.member_added",
        extra={"business_id": business.pk, "user_id": user.pk, "role": role},
    )
    return membership


def update_member(
    membership: Membership, *, role: str, channels: Sequence[Channel], chat_cap: int | None
) -> None:
    """Change role, channel restriction and chat cap; the last admin stays an admin."""
    if role not in Membership.Role.values:
        raise TeamError(f"unknown role {role!r}")
    business = membership.business
    _check_channels(business, channels)
    _check_cap(chat_cap)
    with transaction.atomic():
        Business.objects.select_for_update().filter(pk=business.pk).first()
        if role != Membership.Role.ADMIN and _last_admin(membership):
            raise TeamError(f"{business.name} needs at least one admin")
        Membership.objects.filter(pk=membership.pk).update(role=role, chat_cap=chat_cap)
        membership.channels.set(channels)
    membership.refresh_from_db()


def set_display_name(membership: Membership, name: str) -> str:
    """Set the name this business sees of the member (the member on their profile, or the
    business's admin on the Team page); blank goes back to the user's own name. Returns the
    name now shown."""
    name = " ".join(name.split())
    if len(name) > names.MAX_LENGTH:
        raise TeamError(f"a display name is at most {names.MAX_LENGTH} characters")
    if any(not ch.isprintable() for ch in name):
        raise TeamError("a display name cannot hold control characters")
    Membership.objects.filter(pk=membership.pk).update(display_name=name)
    names.forget(membership.business_id)
    membership.display_name = name
    log.info("team.display_name_set", extra={"membership_id": membership.pk})
    return names.of_membership(membership)


def set_auto_assign(business: Business, enabled: bool) -> None:
    Business.objects.filter(pk=business.pk).update(auto_assign=enabled)


def _last_admin(membership: Membership) -> bool:
    if membership.role != Membership.Role.ADMIN:
        return False
    others = Membership.objects.filter(
        business_id=membership.business_id, role=Membership.Role.ADMIN
    ).exclude(pk=membership.pk)
    return not others.exists()


def password_link_path(user: User) -> str:
    """The path of a one-time "set your password" link (Django's password_reset_confirm). It
    dies once the password is set: the token is made from the password hash and last login."""
    return reverse(
        "password_reset_confirm",
        kwargs={
            "uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
            "token": default_token_generator.make_token(user),
        },
    )


def send_invitation(membership: Membership, link: str) -> None:
    """Mail the set-password link through Django's email backend. The mail is English (the new
    member has chosen no language yet), whatever the inviting admin reads the inbox in."""
    user = membership.user
    with translation.override("en"):
        role = str(membership.get_role_display()).lower()
    send_mail(
        f"You are invited to the {membership.business.name} inbox",
        f"Hello {user.get_username()},\n\n"
        f"{membership.business.name} added you to its WhatsApp inbox as "
        f"{role}. Choose your password here (the link works "
        f"once):\n\n{link}\n\nThen log in with the username {user.get_username()}.\n",
        None,
        [user.email],
    )
    log.info("team.invitation_sent", extra={"user_id": user.pk})


def delete_sessions(user_id: int) -> int:
    """Delete every database session logged in as this user."""
    doomed = [
        session.pk
        for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
        if str(session.get_decoded().get("_auth_user_id")) == str(user_id)
    ]
    Session.objects.filter(pk__in=doomed).delete()
    return len(doomed)


def remove_member(business: Business, user_id: int) -> Removal:
    """Take the user out of the business (see the module docstring for what else goes)."""
    with transaction.atomic():
        Business.objects.select_for_update().filter(pk=business.pk).first()
        membership = Membership.objects.filter(business=business, user_id=user_id).first()
        if membership is None:
            return Removal(False, False, 0, 0, 0)
        if _last_admin(membership):
            raise TeamError(f"{business.name} needs at least one admin")
        membership.delete()
        open_chats = list(
            Chat.objects.filter(
                channel__business=business,
                assigned_to_id=user_id,
                owner__in=(Owner.HUMAN, Owner.PENDING_HUMAN),
            ).values_list("pk", flat=True)
        )
        for chat_id in open_chats:
            assignment.unassign(chat_id)
        deactivated, sessions, tokens = False, 0, 0
        user = get_user_model().objects.get(pk=user_id)
        if not Membership.objects.filter(user_id=user_id).exists() and not user.is_staff:
            get_user_model().objects.filter(pk=user_id).update(is_active=False)
            tokens = ApiToken.objects.filter(user_id=user_id, is_active=True).update(
                is_active=False
            )
            sessions = delete_sessions(user_id)
            deactivated = True
    log.info(
        "team.member_removed",
        extra={"business_id": business.pk, "user_id": user_id, "deactivated": deactivated},
    )
    return Removal(True, deactivated, sessions, tokens, len(open_chats))
