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
from django.utils.translation import gettext

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
        raise ConfigError(gettext("the webhook URL has no host"))
    if parts.scheme != "https" and not (parts.scheme == "http" and host in LOOPBACK):
        raise ConfigError(gettext("the webhook URL for %(host)s must use https") % {"host": host})
    match = _WEBHOOK_PATH.match(parts.path)
    if not match or parts.query or parts.fragment:
        raise ConfigError(
            gettext(
                "the webhook URL for %(host)s must look like "
                "https://%(host)s/rest/<user id>/<code>/"
            )
            % {"host": host}
        )
    _allowed(raw.strip())
    user_id, code = int(match.group(1)), match.group(2)
    return Webhook(f"{parts.scheme}://{parts.netloc}/rest/{user_id}/{code}/", parts.netloc, user_id)


def _portal_url(raw: str) -> str:
    parts = urlsplit(raw.strip())
    host = parts.hostname or ""
    if not host or (parts.scheme != "https" and not (parts.scheme == "http" and host in LOOPBACK)):
        raise ConfigError(gettext("the portal URL must be https://<portal>"))
    _allowed(raw.strip())
    return f"{parts.scheme}://{parts.netloc}"


def _allowed(url: str) -> None:
    try:
        egress.check(url)
    except egress.EgressRefused as exc:
        raise ConfigError(egress.explain(exc)) from None


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
        raise ConfigError(gettext("entity must be deal or lead"))
    if "mode" in given and given["mode"] not in Bitrix24Settings.Mode.values:
        raise ConfigError(gettext("mode must be webhook or app"))
    for name in ("rate_limit", "burst"):
        if name in given and float(given[name]) <= 0:
            raise ConfigError(gettext("%(name)s must be positive") % {"name": name})
    field_map = given.pop("field_map", None)
    if field_map is not None:
        cfg.field_map = {**cfg.field_map, **field_map}
    for name, value in given.items():
        if not hasattr(cfg, name):
            raise ConfigError(gettext("unknown setting %(name)s") % {"name": name})
        setattr(cfg, name, value)
    if cfg.mode == Bitrix24Settings.Mode.APP and not cfg.auth_connector:
        cfg.auth_connector = f"wa_inbox_{business.pk}_{secrets.token_hex(4)}"
    cfg.save()
    return cfg


def describe(cfg: Bitrix24Settings) -> list[str]:
    """The settings as an operator may see them: secrets only as set / not set. In the active
    language (the settings page's reader; English for the management command)."""

    def secret(value: str) -> str:
        return gettext("set") if value else gettext("not set")

    lines = [
        gettext("business: %(name)s") % {"name": cfg.business.name},
        gettext("active: %(answer)s")
        % {"answer": gettext("yes") if cfg.is_active else gettext("no")},
        gettext("mode: %(mode)s") % {"mode": cfg.get_mode_display()},
        gettext("portal: %(portal)s") % {"portal": cfg.portal_host or "-"},
        gettext("webhook URL: %(state)s") % {"state": secret(cfg.webhook_url)},
        gettext("application token: %(state)s") % {"state": secret(cfg.application_token)},
        gettext("entity: %(entity)s, pipeline: %(pipeline)s, handoff stage: %(stage)s")
        % {
            "entity": cfg.get_entity_display(),
            "pipeline": cfg.pipeline_id,
            "stage": cfg.handoff_stage or gettext("(unchanged)"),
        },
        gettext("rate limit: %(rate)s/s, burst %(burst)s (we use 90 %% / 80 %% of it)")
        % {"rate": f"{cfg.rate_limit:g}", "burst": cfg.burst},
        gettext("technical user: %(user)s") % {"user": cfg.technical_user_id or "-"},
    ]
    if cfg.mode == Bitrix24Settings.Mode.APP:
        lines += [
            gettext("client id: %(client)s, client secret: %(state)s")
            % {"client": cfg.client_id or "-", "state": secret(cfg.client_secret)},
            gettext("tokens: %(state)s, installed: %(installed)s")
            % {"state": secret(cfg.refresh_token), "installed": cfg.installed_at or gettext("no")},
            gettext("open channels: %(connector)s line %(line)s")
            % {"connector": cfg.connector_id or "-", "line": cfg.line_id or "-"},
        ]
    if cfg.field_map:
        fields = ", ".join(f"{k}→{v}" for k, v in cfg.field_map.items())
        lines.append(gettext("user fields: %(fields)s") % {"fields": fields})
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
