"""How our data looks in Bitrix24 and back: phone numbers, names, titles, comment texts with
their idempotency markers, and the hash of the synced fields that breaks echo loops."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.urls import NoReverseMatch, reverse

from inbox.conversations import delivery_errors
from inbox.conversations.models import Chat, Handoff, Message

DEAL_FIELDS = ("stageId", "categoryId", "assignedById")
LEAD_FIELDS = ("stageId", "assignedById")
CONTACT_FIELDS = ("name", "lastName")


class Origin(StrEnum):
    """What of ours a Bitrix24 record stands for: the part of its `originId` (`chat-12`) and of
    its comment's marker (`[inbox:handoff:7]`) that names the inbox's object."""

    CHAT = "chat"
    HANDOFF = "handoff"
    FAILED = "failed"


def phone_digits(value: str) -> str:
    return re.sub(r"\D", "", value or "")


def chat_phone(chat: Chat) -> str:
    """The customer's number in international form (+77001234567), or "" when WhatsApp gave
    us only a business-scoped user id."""
    digits = phone_digits(chat.customer_phone) or (
        chat.customer_key if chat.customer_key.isdigit() else ""
    )
    return f"+{digits}" if 7 <= len(digits) <= 15 else ""


def masked_phone(phone: str) -> str:
    digits = phone_digits(phone)
    return f"+{digits[:3]}…{digits[-2:]}" if len(digits) > 5 else "…"


def origin_id(kind: Origin, pk: int) -> str:
    """`originId` of entities we create: how a retry finds what an earlier attempt wrote."""
    return f"{kind}-{pk}"


def chat_url(chat: Chat) -> str:
    try:
        path = reverse("chat_detail", args=[chat.pk])
    except NoReverseMatch:
        path = f"/inbox/?chat={chat.pk}"
    return f"{settings.PUBLIC_BASE_URL}{path}"


def customer_label(chat: Chat) -> str:
    return chat.customer_name.strip() or masked_phone(chat_phone(chat)) or f"chat {chat.pk}"


def entity_title(chat: Chat) -> str:
    return f"WhatsApp: {customer_label(chat)}"[:255]


def split_name(name: str) -> tuple[str, str]:
    parts = name.strip().split(maxsplit=1)
    if not parts:
        return "", ""
    return parts[0], (parts[1] if len(parts) > 1 else "")


def marker(kind: Origin, pk: int) -> str:
    """A line in each comment we write; finding it proves the comment exists already."""
    return f"[inbox:{kind}:{pk}]"


def link_comment(chat: Chat) -> str:
    return (
        f"WhatsApp conversation with {customer_label(chat)} ({chat.channel.name}).\n"
        f"Open in the inbox: {chat_url(chat)}\n{marker(Origin.CHAT, chat.pk)}"
    )


def item_text(item: Any) -> str:
    """One collected item as people write it: `Oak table × 2`."""
    if not isinstance(item, Mapping):
        return str(item)
    name = item.get("name") or item.get("item") or item.get("sku") or "?"
    qty = item.get("quantity") or item.get("qty")
    return f"{name} × {qty}" if qty not in (None, "") else str(name)


def fact_value(value: Any) -> Any:
    """A handoff fact as a user-field value: lists of items become one readable line."""
    if isinstance(value, list | tuple):
        return "; ".join(item_text(v) for v in value)
    return value


def _facts_lines(facts: Mapping[str, Any]) -> list[str]:
    lines = []
    items = facts.get("items") if isinstance(facts, Mapping) else None
    if isinstance(items, list) and items:
        lines.append("Items:")
        lines.extend(f"  - {item_text(item)}" for item in items)
    for key, value in sorted(facts.items()) if isinstance(facts, Mapping) else []:
        if key == "items" or value in (None, "", [], {}):
            continue
        lines.append(f"{key.replace('_', ' ').capitalize()}: {value}")
    return lines


def handoff_comment(handoff: Handoff) -> str:
    parts = [f"Handed over to a manager: {handoff.reason}."]
    if handoff.summary.strip():
        parts.append(f"Summary: {handoff.summary.strip()}")
    parts.extend(_facts_lines(handoff.facts or {}))
    parts.append(f"Chat: {chat_url(handoff.chat)}")
    parts.append(marker(Origin.HANDOFF, handoff.pk))
    return "\n".join(parts)


def failed_message_comment(message: Message) -> str:
    """A message the customer did not get (a quote, a manager's answer), and why."""
    who = "The assistant's" if message.author == Message.Author.BOT else "A manager's"
    parts = [f"{who} WhatsApp message was not delivered."]
    parts.append(f"Why: {delivery_errors.explain(message.error_code, message.error_title)}")
    if message.text.strip():
        parts.append(f"Message: {message.text.strip()[:1000]}")
    parts.append(f"Chat: {chat_url(message.chat)}")
    parts.append(marker(Origin.FAILED, message.pk))
    return "\n".join(parts)


def _normal(value: Any) -> Any:
    if value is None or value == "":
        return ""
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return str(value)


def relevant_state(
    item: Mapping[str, Any], names: Iterable[str], userfields: Iterable[str] = ()
) -> dict[str, Any]:
    """The fields we sync, normalised (strings, "" for empty) so what we wrote and what we read
    back compare equal."""
    state = {name: _normal(item.get(name)) for name in names}
    for uf in userfields:
        state[uf] = _normal(item.get(uf))
    return state


def state_hash(state: Mapping[str, Any]) -> str:
    return hashlib.sha256(
        json.dumps(state, sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()


def parse_datetime(value: Any) -> datetime | None:
    """Bitrix24 dates carry an offset (server time zone): parse to aware datetimes."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None
