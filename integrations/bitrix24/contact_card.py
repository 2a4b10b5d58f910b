"""The Bitrix24 lead or deal of a chat, as the inbox's contact panel shows it.

Registered with `inbox.web.crm_cards` by the site shell; reads what the sync last stored and
never calls the portal. The link names the portal's host only, never the webhook's secret path.
"""

from __future__ import annotations

from inbox.conversations.models import Chat
from inbox.web.crm_cards import CrmCard
from integrations.bitrix24.models import Bitrix24Settings, CrmLink

SYSTEM = "Bitrix24"


def card(chat: Chat) -> CrmCard | None:
    """The chat's linked lead/deal, or None when the sync has not linked one."""
    link = CrmLink.objects.filter(chat_id=chat.pk, remote_deleted=False).first()
    if link is None or not link.entity_id:
        return None
    cfg = Bitrix24Settings.objects.filter(business_id=link.business_id).first()
    host = cfg.portal_host if cfg is not None else ""
    entity = link.entity_type or Bitrix24Settings.Entity.DEAL
    url = f"https://{host}/crm/{entity}/details/{link.entity_id}/" if host else ""
    return CrmCard(
        system=SYSTEM,
        entity=entity,
        entity_id=link.entity_id,
        url=url,
        stage=link.stage_name or link.stage_id,
        outcome=link.stage_semantics,
    )
