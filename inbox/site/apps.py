from __future__ import annotations

from django.apps import AppConfig


class SiteConfig(AppConfig):
    """The site shell. Its `ready` is the one place that wires the packages together: which
    transports send for which channel kind, and who listens to the conversation core."""

    name = "inbox.site"
    label = "inbox_site"
    verbose_name = "Site"

    def ready(self) -> None:
        # Inside ready(): the apps these modules' models belong to must be loaded first.
        from inbox.conversations import hooks, transport_registry
        from inbox.conversations.models import Channel
        from inbox.conversations.pending_replies import PendingReplyTrigger
        from inbox.web import crm_cards
        from inbox.web.live.dashboard_push import DashboardPush
        from inbox.web.live.notify import NotificationPush
        from integrations.bitrix24 import contact_card
        from integrations.bitrix24.hooks import CrmSync
        from integrations.sandbox import SandboxTransport
        from integrations.whatsapp.bridge import BridgeTransport
        from integrations.whatsapp.cloud_api import CloudApiTransport
        from integrations.whatsapp.gateways import evolution, waha

        transport_registry.register(Channel.Kind.CLOUD_API, CloudApiTransport)
        transport_registry.register(Channel.Kind.BRIDGE, BridgeTransport)
        transport_registry.register(Channel.Kind.SANDBOX, SandboxTransport)
        transport_registry.register(Channel.Kind.EVOLUTION, evolution.EvolutionTransport)
        transport_registry.register_check(Channel.Kind.EVOLUTION, evolution.check_connection)
        transport_registry.register(Channel.Kind.WAHA, waha.WahaTransport)
        transport_registry.register_check(Channel.Kind.WAHA, waha.check_connection)
        hooks.subscribe(DashboardPush())
        hooks.subscribe(NotificationPush())
        hooks.subscribe(CrmSync())
        hooks.subscribe(PendingReplyTrigger())
        crm_cards.register(contact_card.SYSTEM, contact_card.card)
