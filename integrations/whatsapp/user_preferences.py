"""WhatsApp's own marketing opt-out, announced by the `user_preferences` webhook field: a
customer who stops a business's marketing messages in WhatsApp goes on the opt-out register
(`inbox/conversations/opt_outs.py`, source "WhatsApp"), and one who resumes them comes off it
again, unless they also asked in the chat or a manager put them there (those stay).

    {"field": "user_preferences", "value": {"metadata": {"phone_number_id": …},
     "contacts": [{"wa_id": …, "user_id": <BSUID>}],
     "user_preferences": [{"wa_id": …, "category": "marketing_messages",
                           "value": "stop" | "resume" | "signup", "detail": …}]}}
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from inbox.conversations import opt_outs
from inbox.conversations.models import Channel, Chat, OptOut

log = logging.getLogger(__name__)

FIELD = "user_preferences"
CATEGORY = "marketing_messages"


@dataclass(frozen=True)
class PreferenceChange:
    channel_id: int
    wa_id: str
    bsuid: str
    stopped: bool  # False: resumed
    detail: str


def changes(body: Any, channels: Mapping[str, int]) -> list[PreferenceChange]:
    """The stop / resume changes of a webhook body, for the channels we have (by
    phone_number_id). A signup through a link changes nothing here."""
    found: list[PreferenceChange] = []
    entries = body.get("entry") if isinstance(body, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        for change in entry.get("changes") or [] if isinstance(entry, dict) else []:
            if not isinstance(change, dict) or change.get("field") != FIELD:
                continue
            value = change.get("value")
            if not isinstance(value, dict):
                continue
            metadata = value.get("metadata") or {}
            channel_id = channels.get(str(metadata.get("phone_number_id") or ""))
            if channel_id is None:
                continue
            bsuids = {
                str(c.get("wa_id") or ""): str(c.get("user_id") or "")
                for c in value.get("contacts") or []
                if isinstance(c, dict)
            }
            for pref in value.get(FIELD) or []:
                if not isinstance(pref, dict) or pref.get("category") != CATEGORY:
                    continue
                if pref.get("value") not in ("stop", "resume"):
                    continue
                wa_id = str(pref.get("wa_id") or "")
                found.append(
                    PreferenceChange(
                        channel_id,
                        wa_id,
                        bsuids.get(wa_id, "") or str(pref.get("user_id") or ""),
                        pref["value"] == "stop",
                        str(pref.get("detail") or "")[:200],
                    )
                )
    return found


def apply(found: list[PreferenceChange]) -> int:
    """Write each change to the register; the number of rows it changed."""
    written = 0
    for change in found:
        channel = Channel.objects.filter(pk=change.channel_id).only("business_id").first()
        if channel is None:
            continue
        key = _customer_key(change)
        if not key:
            continue
        if change.stopped:
            written += opt_outs.record(
                channel.business_id,
                key,
                OptOut.Source.PLATFORM,
                detail=change.detail or "Stopped marketing messages in WhatsApp",
            )
        else:
            written += opt_outs.platform_resumed(channel.business_id, key)
    return written


def apply_quietly(found: list[PreferenceChange]) -> None:
    """`apply` for the webhook, which needs no count."""
    apply(found)


def _customer_key(change: PreferenceChange) -> str:
    """The customer's key as their chat has it (the phone, or the BSUID of a username-only
    customer); the phone, else the BSUID, when there is no chat yet."""
    match = Q(customer_key=change.wa_id) if change.wa_id else Q(pk__in=[])
    if change.bsuid:
        match |= Q(customer_bsuid=change.bsuid) | Q(customer_key=change.bsuid)
    chat = Chat.objects.filter(match, channel_id=change.channel_id).only("customer_key").first()
    if chat is not None:
        return chat.customer_key
    return change.wa_id or change.bsuid
