"""A linked-device gateway (Evolution API, WAHA) as its channel page explains it: the exact
settings to give the gateway, and the "Test connection" answer in words a business admin reads.

The events listed are the ones the webhook readers (`integrations/whatsapp/gateways/
evolution_events.py`, `waha_events.py`) act on; `tests/inbox/web/settings/test_gateway_page.py`
holds the two lists together. The channel's key is never written into the page: the commands
say "<your channel key>" where it goes.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext

from inbox.conversations import transport_registry
from inbox.conversations.models import Channel

GATEWAY_KINDS = (Channel.Kind.EVOLUTION, Channel.Kind.WAHA)
KEY_PLACEHOLDER = "<your channel key>"
# The webhook path of each kind (`integrations/whatsapp/webhooks.py`'s routing table).
WEBHOOK_ROUTES: dict[str, str] = {Channel.Kind.EVOLUTION: "evolution", Channel.Kind.WAHA: "waha"}

EVOLUTION_EVENTS = (
    "MESSAGES_UPSERT",
    "MESSAGES_SET",
    "MESSAGES_UPDATE",
    "SEND_MESSAGE",
    "CONNECTION_UPDATE",
)
WAHA_EVENTS = (
    "message",
    "message.any",
    "message.ack",
    "message.edited",
    "message.revoked",
    "session.status",
)
# Without it Evolution's webhooks carry `"apikey": null`, which the inbox refuses (403).
EVOLUTION_ENV = "AUTHENTICATION_EXPOSE_IN_FETCH_INSTANCES=true"


@dataclass(frozen=True)
class GatewaySetup:
    """What to set on the gateway for one channel; `env` is empty for WAHA."""

    webhook_url: str
    events: tuple[str, ...]
    env: str
    config_json: str  # Evolution: `webhook/set`'s body; WAHA: the session's `config`
    command: str  # a ready curl that applies `config_json`


def webhook_url(channel: Channel) -> str:
    """The public address of the channel's webhook (nginx sends `/webhooks/` to the webhook
    server)."""
    return f"{settings.PUBLIC_BASE_URL}/webhooks/{WEBHOOK_ROUTES[channel.kind]}/{channel.pk}/"


def setup_for(channel: Channel) -> GatewaySetup | None:
    """The settings box of a gateway channel; None for the other kinds."""
    if channel.kind == Channel.Kind.EVOLUTION:
        return _evolution(channel)
    if channel.kind == Channel.Kind.WAHA:
        return _waha(channel)
    return None


def _gateway_base(channel: Channel) -> str:
    return channel.bridge_url.rstrip("/") or "<gateway URL>"


def _evolution(channel: Channel) -> GatewaySetup:
    url = webhook_url(channel)
    body = {
        "webhook": {
            "enabled": True,
            "url": url,
            "byEvents": False,
            "base64": False,
            "events": list(EVOLUTION_EVENTS),
        }
    }
    config = json.dumps(body, indent=2)
    instance = channel.gateway_instance or "<instance>"
    command = (
        f"curl -X POST {shlex.quote(f'{_gateway_base(channel)}/webhook/set/{instance}')} \\\n"
        f"  -H {shlex.quote(f'apikey: {KEY_PLACEHOLDER}')} "
        "-H 'Content-Type: application/json' \\\n"
        f"  -d {shlex.quote(json.dumps(body))}"
    )
    return GatewaySetup(url, EVOLUTION_EVENTS, EVOLUTION_ENV, config, command)


def _waha(channel: Channel) -> GatewaySetup:
    url = webhook_url(channel)
    config_body = {
        "webhooks": [{"url": url, "events": list(WAHA_EVENTS), "hmac": {"key": KEY_PLACEHOLDER}}]
    }
    session = channel.gateway_instance or "default"
    command = (
        f"curl -X PUT {shlex.quote(f'{_gateway_base(channel)}/api/sessions/{session}')} \\\n"
        f"  -H {shlex.quote(f'X-Api-Key: {KEY_PLACEHOLDER}')} "
        "-H 'Content-Type: application/json' \\\n"
        f"  -d {shlex.quote(json.dumps({'name': session, 'config': config_body}))}"
    )
    return GatewaySetup(url, WAHA_EVENTS, "", json.dumps(config_body, indent=2), command)


@dataclass(frozen=True)
class ConnectionReport:
    linked: bool
    text: str


def connection_report(channel: Channel) -> ConnectionReport | None:
    """Asks the gateway whether the number is linked, with the saved settings; None for a kind
    with nothing to test. Never raises for what the gateway does: a refused address, an
    unreachable host or a wrong key come back as the report's text."""
    if not channel.bridge_url:
        return ConnectionReport(False, gettext("Give the gateway URL and save first."))
    if channel.kind == Channel.Kind.EVOLUTION and not channel.gateway_instance:
        return ConnectionReport(False, gettext("Give the instance name and save first."))
    answer = transport_registry.check_connection(channel)
    if answer is None:
        return None
    linked, detail = answer
    return ConnectionReport(linked, detail)
