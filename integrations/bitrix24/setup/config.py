"""Configuring a business's sync (management command, admin, the settings page later).

The webhook URL is a bearer secret: it is validated here, stored encrypted, and never echoed
back; messages name the portal host only.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction

from inbox.conversations.models import Business, Chat, Handoff
from inbox.platform import egress
from integrations.bitrix24.models import Bitrix24Settings, HandoffSync
from integrations.bitrix24.sync import full_sync, outbox

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_WEBHOOK_PATH = re.compile(r"^/rest/(\d+)/([A-Za-z0-9_]+)/?(?:[a-z0-9_.]+(?:\.json)?)?$")


CLEARABLE_SECRETS = ("webhook_url", "application_token", "client_secret")


class ConfigError(ValueError):
    """A setting is not acceptable; the message never contains a secret."""


@dataclass(frozen=True)
class Webhook:
    url: str
    portal_host: str
    user_id: int


def parse_webhook_url(raw: str) -> Webhook:
    """`https://{portal}/rest/{user}/{code}/` (a method name after it is dropped). HTTPS is
    required, except on this machine (development and tests)."""
    parts = urlsplit(raw.strip())
    host = parts.hostname or ""
    if not host:
        raise ConfigError("the webhook URL has no host")
    if parts.scheme != "https" and not (parts.scheme == "http" and host in LOOPBACK):
        raise ConfigError(f"the webhook URL for {host} must use https")
    match = _WEBHOOK_PATH.match(parts.path)
    if not match or parts.query or parts.fragment:
        raise ConfigError(
            f"the webhook URL for {host} must look like https://{host}/rest/<user id>/<code>/"
        )
    _allowed(raw.strip())
    user_id, code = int(match.group(1)), match.group(2)
    return Webhook(f"{parts.scheme}://{parts.netloc}/rest/{user_id}/{code}/", parts.netloc, user_id)


def _portal_url(raw: str) -> str:
    parts = urlsplit(raw.strip())
    host = parts.hostname or ""
    if not host or (parts.scheme != "https" and not (parts.scheme == "http" and host in LOOPBACK)):
        raise ConfigError("the portal URL must be https://<portal>")
    _allowed(raw.strip())
    return f"{parts.scheme}://{parts.netloc}"


def _allowed(url: str) -> None:
    try:
        egress.check(url)
    except egress.EgressRefused as exc:
        raise ConfigError(str(exc)) from None


def configure(business: Business, **options: Any) -> Bitrix24Settings:
    """Create or update the business's settings from the given options (None = unchanged; ""
    for a secret clears it)."""
    cfg, _ = Bitrix24Settings.objects.get_or_create(business=business)
    given = {k: v for k, v in options.items() if v is not None}
    for name in CLEARABLE_SECRETS:
        if given.get(name) == "":
            setattr(cfg, name, "")  # cleared explicitly by the admin
            del given[name]
    if "webhook_url" in given:
        hook = parse_webhook_url(str(given.pop("webhook_url")))
        cfg.webhook_url = hook.url
        cfg.mode = Bitrix24Settings.Mode.WEBHOOK
        cfg.technical_user_id = cfg.technical_user_id or hook.user_id
        if not cfg.portal_url:
            cfg.portal_url = f"{urlsplit(hook.url).scheme}://{hook.portal_host}"
    if "portal_url" in given:
        cfg.portal_url = _portal_url(str(given.pop("portal_url")))
    if "entity" in given and given["entity"] not in Bitrix24Settings.Entity.values:
        raise ConfigError("entity must be deal or lead")
    if "mode" in given and given["mode"] not in Bitrix24Settings.Mode.values:
        raise ConfigError("mode must be webhook or app")
    for name in ("rate_limit", "burst"):
        if name in given and float(given[name]) <= 0:
            raise ConfigError(f"{name} must be positive")
    field_map = given.pop("field_map", None)
    if field_map is not None:
        cfg.field_map = {**cfg.field_map, **field_map}
    for name, value in given.items():
        if not hasattr(cfg, name):
            raise ConfigError(f"unknown setting {name}")
        setattr(cfg, name, value)
    if cfg.mode == Bitrix24Settings.Mode.APP and not cfg.auth_connector:
        cfg.auth_connector = f"wa_inbox_{business.pk}_{secrets.token_hex(4)}"
    cfg.save()
    return cfg


def describe(cfg: Bitrix24Settings) -> list[str]:
    """The settings as an operator may see them: secrets only as set / not set."""

    def secret(value: str) -> str:
        return "set" if value else "not set"

    lines = [
        f"business: {cfg.business.name}",
        f"active: {'yes' if cfg.is_active else 'no'}",
        f"mode: {cfg.get_mode_display()}",
        f"portal: {cfg.portal_host or '-'}",
        f"webhook URL: {secret(cfg.webhook_url)}",
        f"application token: {secret(cfg.application_token)}",
        f"entity: {cfg.entity}, pipeline: {cfg.pipeline_id}, "
        f"handoff stage: {cfg.handoff_stage or '(unchanged)'}",
        f"rate limit: {cfg.rate_limit:g}/s, burst {cfg.burst} (we use 90 % / 80 % of it)",
        f"technical user: {cfg.technical_user_id or '-'}",
    ]
    if cfg.mode == Bitrix24Settings.Mode.APP:
        lines += [
            f"client id: {cfg.client_id or '-'}, client secret: {secret(cfg.client_secret)}",
            f"tokens: {secret(cfg.refresh_token)}, installed: {cfg.installed_at or 'no'}",
            f"open channels: {cfg.connector_id or '-'} line {cfg.line_id or '-'}",
        ]
    if cfg.field_map:
        lines.append("user fields: " + ", ".join(f"{k}→{v}" for k, v in cfg.field_map.items()))
    return lines


def request_full_sync(business_id: int) -> int:
    """Mark every chat (and handoff) of the business for a checking sync pass: missing CRM
    records are found or created, nothing that exists is written again. Returns the chats."""
    chats = list(Chat.objects.filter(channel__business_id=business_id).select_related("channel"))
    with transaction.atomic():
        for chat in chats:
            link = outbox.request_sync(chat, verify=True)
            for handoff in Handoff.objects.filter(chat=chat):
                # A past handoff's stage move is not replayed: the deal may have moved on
                # since (won, lost). Only its timeline comment is checked.
                HandoffSync.objects.get_or_create(
                    handoff=handoff, defaults={"link": link, "stage_done": True}
                )
        full_sync.start(business_id, len(chats))
        outbox.enqueue_push_on_commit(business_id)
    return len(chats)
