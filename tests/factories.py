"""Small builders for the rows most tests need. Plain functions, real database rows."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.db.models import F
from django.utils import timezone

from inbox.conversations import window
from inbox.conversations.models import Business, Channel, Chat, Membership, Message

_seq = itertools.count(1)


def business(name: str | None = None, **kwargs: Any) -> Business:
    return Business.objects.create(name=name or f"Business {next(_seq)}", **kwargs)


def channel(
    biz: Business | None = None, kind: str = Channel.Kind.SANDBOX, **kwargs: Any
) -> Channel:
    n = next(_seq)
    defaults: dict[str, Any] = {"name": f"Channel {n}"}
    if kind == Channel.Kind.CLOUD_API:
        defaults.update(phone_number_id=f"10654035224{n:04d}", access_token="test-token")
    if kind == Channel.Kind.BRIDGE:
        defaults.update(bridge_url="http://127.0.0.1:9/", bridge_token=f"bridge-token-{n}")
    defaults.update(kwargs)
    return Channel.objects.create(business=biz or business(), kind=kind, **defaults)


def chat(ch: Channel | None = None, **kwargs: Any) -> Chat:
    """A chat; on a Cloud API channel one whose customer just wrote (its 24-hour window open)
    unless `window_closes_at` says otherwise."""
    n = next(_seq)
    ch = ch or channel()
    defaults: dict[str, Any] = {"customer_key": f"7700{n:07d}", "customer_name": f"Customer {n}"}
    if ch.kind == Channel.Kind.CLOUD_API:
        defaults["window_closes_at"] = timezone.now() + window.WINDOW
    defaults.update(kwargs)
    return Chat.objects.create(channel=ch, **defaults)


def customer_message(c: Chat, text: str = "hello", **kwargs: Any) -> Message:
    """A stored customer message, counted like the ingest counts it (for unread badges)."""
    Chat.objects.filter(pk=c.pk).update(customer_messages=F("customer_messages") + 1)
    c.customer_messages += 1
    return Message.objects.create(
        chat=c,
        channel=c.channel,
        direction=Message.Direction.INBOUND,
        author=Message.Author.CUSTOMER,
        text=text,
        provider_message_id=kwargs.pop("provider_message_id", f"wamid.test{next(_seq)}"),
        **kwargs,
    )


def manager(
    biz: Business, username: str | None = None, role: str = Membership.Role.MANAGER
) -> AbstractUser:
    user = get_user_model().objects.create_user(
        username=username or f"manager{next(_seq)}", password="pw-for-tests-only"
    )
    Membership.objects.create(user=user, business=biz, role=role)
    return user  # type: ignore[return-value]
