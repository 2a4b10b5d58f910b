"""What a CRM knows about a chat, for the contact panel: the one way the web layer hears it.

The web layer never imports an integration (imports run site → integrations → web). A CRM
integration registers a provider here at start (`inbox/site/apps.py`); the panel asks
`cards_for(chat)` and shows what the providers return.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from inbox.conversations.models import Chat


@dataclass(frozen=True)
class CrmCard:
    system: str  # "Bitrix24"
    entity: str  # "deal", "lead"
    entity_id: int
    url: str  # where the manager opens it; "" when the portal's address is unknown
    stage: str = ""
    outcome: str = ""  # "in_progress", "won", "lost" or ""


CardProvider = Callable[[Chat], "CrmCard | None"]

_providers: dict[str, CardProvider] = {}


def register(system: str, provider: CardProvider) -> None:
    """Add (or replace) the provider of one CRM system."""
    _providers[system] = provider


def cards_for(chat: Chat) -> list[CrmCard]:
    cards = (provider(chat) for provider in _providers.values())
    return [card for card in cards if card is not None]
