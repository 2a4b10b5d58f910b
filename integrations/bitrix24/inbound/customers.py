"""What the CRM may change on a chat: only the customer's display name. `Chat.owner` and
everything else of the conversation belong to the inbox."""

from __future__ import annotations

import logging

from inbox.conversations import hooks
from inbox.conversations.models import Chat

log = logging.getLogger(__name__)


def update_customer_name(chat_id: int, name: str) -> bool:
    """Set the chat's customer name to the CRM contact's name. Returns False when it was
    already that name (or the CRM name is empty, which never blanks ours)."""
    name = " ".join(name.split())[:200]
    if not name:
        return False
    changed = Chat.objects.filter(pk=chat_id).exclude(customer_name=name).update(customer_name=name)
    if changed:
        log.info("bitrix24.customer_renamed", extra={"chat_id": chat_id})
        hooks.chat_changed(chat_id)
    return bool(changed)
