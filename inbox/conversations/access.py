"""Who may see what: the one place tenant isolation is decided.

Every view, consumer, API endpoint and media download asks these functions; menus hiding a
link is never the protection.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from inbox.conversations.models import Business, Channel, Chat, Membership

User = AbstractBaseUser | AnonymousUser


def memberships(user: User) -> QuerySet[Membership]:
    if not user.is_authenticated:
        return Membership.objects.none()
    return Membership.objects.filter(user_id=int(user.pk))


def visible_businesses(user: User) -> QuerySet[Business]:
    if not user.is_authenticated:
        return Business.objects.none()
    return Business.objects.filter(memberships__user_id=int(user.pk)).distinct()


def visible_channels(user: User) -> QuerySet[Channel]:
    """Channels of the user's businesses; a membership with assigned channels narrows to them."""
    if not user.is_authenticated:
        return Channel.objects.none()
    rules = Q(pk__in=[])
    for membership in memberships(user).prefetch_related("channels"):
        assigned = [channel.pk for channel in membership.channels.all()]
        if assigned and membership.role == Membership.Role.MANAGER:
            rules |= Q(pk__in=assigned)
        else:
            rules |= Q(business_id=membership.business_id)
    return Channel.objects.filter(rules)


def visible_chats(user: User) -> QuerySet[Chat]:
    return Chat.objects.filter(channel__in=visible_channels(user))


def can_see_chat(user: User, chat_id: int) -> bool:
    return visible_chats(user).filter(pk=chat_id).exists()


def visible_business_ids(user: User) -> list[int]:
    return list(visible_businesses(user).values_list("pk", flat=True))


def visible_channel_ids(user: User) -> set[int]:
    return set(visible_channels(user).values_list("pk", flat=True))


def visible_chat(user: User, chat_id: int) -> Chat | None:
    """The chat if this user may see it, else None (callers answer 404: never reveal that a
    chat of another business exists)."""
    return (
        visible_chats(user)
        .select_related("channel", "channel__business", "assigned_to")
        .filter(pk=chat_id)
        .first()
    )


def administered_businesses(user: User) -> QuerySet[Business]:
    """Businesses whose settings pages (channels, review, price list...) this user may open."""
    if not user.is_authenticated:
        return Business.objects.none()
    return Business.objects.filter(
        memberships__user_id=int(user.pk), memberships__role=Membership.Role.ADMIN
    ).distinct()


def administered_channels(user: User) -> QuerySet[Channel]:
    return Channel.objects.filter(business__in=administered_businesses(user))


def is_any_business_admin(user: User) -> bool:
    return administered_businesses(user).exists()


def assignable_memberships(chat: Chat) -> QuerySet[Membership]:
    """Who a chat may be assigned to: members of its business who can see its channel."""
    return (
        Membership.objects.filter(business_id=chat.channel.business_id)
        .filter(
            Q(role=Membership.Role.ADMIN) | Q(channels__isnull=True) | Q(channels=chat.channel_id)
        )
        .select_related("user")
        .distinct()
        .order_by("user__username")
    )


def can_be_assigned(user_id: int, chat: Chat) -> bool:
    return assignable_memberships(chat).filter(user_id=user_id).exists()
