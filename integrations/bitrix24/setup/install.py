"""Local-application install: Bitrix24 posts ONAPPINSTALL with the app's first OAuth tokens
and its application token. We keep them for the business whose portal it is, then (in a
worker) prove them by calling our configured portal, and bind the events the sync needs.

The install payload's own endpoints are never called: only the portal URL the business
configured, so a forged install cannot point us anywhere.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone

from integrations.bitrix24.models import Bitrix24Settings, CrmEntity
from integrations.bitrix24.payloads import CrmAction, EventName, crm_event
from integrations.bitrix24.rest.client import AppAuth, Bitrix24Client, Command
from integrations.bitrix24.rest.connection import client_for
from integrations.bitrix24.rest.errors import AuthError
from integrations.bitrix24.rest.limiter import portal_bucket

log = logging.getLogger(__name__)

ICON = (
    "data:image/svg+xml;charset=US-ASCII,%3Csvg%20xmlns%3D%22http%3A//www.w3.org/2000/svg%22%20"
    "viewBox%3D%220%200%2070%2071%22%3E%3Ccircle%20cx%3D%2235%22%20cy%3D%2235%22%20r%3D%2230%22%20"
    "fill%3D%22%2325D366%22/%3E%3C/svg%3E"
)


def handler_url() -> str:
    return f"{settings.PUBLIC_BASE_URL}/webhooks/bitrix24/"


def record_install(form: dict[str, Any]) -> int | None:
    """Keep the tokens of an ONAPPINSTALL, as pending, for the app-mode business on that portal
    (unless its app is installed for another portal member). Nothing already in use is touched
    until a worker has proved them. Returns the business id."""
    auth = form.get("auth") if isinstance(form.get("auth"), dict) else {}
    assert isinstance(auth, dict)
    domain = str(auth.get("domain") or "").lower()
    member_id = str(auth.get("member_id") or "")
    pending = {
        "member_id": member_id,
        "access_token": str(auth.get("access_token") or ""),
        "refresh_token": str(auth.get("refresh_token") or ""),
        "application_token": str(auth.get("application_token") or ""),
        "expires_in": str(auth.get("expires_in") or "3600"),
    }
    if not (domain and all(pending.values())):
        return None
    for cfg in Bitrix24Settings.objects.filter(mode=Bitrix24Settings.Mode.APP, is_active=True):
        host = urlsplit(cfg.portal_url).netloc.lower()
        if domain not in (host, host.split(":")[0]):
            continue
        if cfg.member_id and cfg.member_id != member_id:
            continue
        cfg.pending_install = json.dumps(pending)
        cfg.save(update_fields=["pending_install"])
        log.info("bitrix24.app_install_received", extra={"business_id": cfg.business_id})
        return cfg.business_id
    return None


class _PendingTokens:
    """The install's own access token, used once to prove it; it is never refreshed."""

    def __init__(self, token: str) -> None:
        self.token = token

    def access_token(self) -> str:
        return self.token

    def refresh(self, stale: str) -> str:
        raise AuthError("expired_token", "the install token expired before it was checked")


def bind_commands(cfg: Bitrix24Settings) -> list[Command]:
    """event.bind calls: offline events for the synced entities (our own writes, made with
    `auth_connector`, are not queued back), a ping when the offline queue fills, and the
    operator replies of the Open Channels connector."""
    entity = CrmEntity.LEAD if cfg.entity == Bitrix24Settings.Entity.LEAD else CrmEntity.DEAL
    offline = [
        crm_event(entity, CrmAction.ADD),
        crm_event(entity, CrmAction.UPDATE),
        crm_event(entity, CrmAction.DELETE),
        crm_event(CrmEntity.CONTACT, CrmAction.UPDATE),
    ]
    commands = []
    for index, event in enumerate(offline):
        params: dict[str, Any] = {"event": event, "event_type": "offline"}
        if cfg.auth_connector:
            params["auth_connector"] = cfg.auth_connector
        commands.append(Command(f"off{index}", "event.bind", params))
    commands.append(
        Command("ping", "event.bind", {"event": EventName.OFFLINE_EVENT, "handler": handler_url()})
    )
    if cfg.sync_open_channels and cfg.connector_id:
        commands.append(
            Command(
                "reply",
                "event.bind",
                {"event": EventName.CONNECTOR_MESSAGE_ADD, "handler": handler_url()},
            )
        )
    return commands


def complete_install(business_id: int) -> bool:
    """Prove the received tokens against our configured portal, then use them: bind events,
    register the connector. A failed proof drops them; the tokens in use stay as they were."""
    cfg = Bitrix24Settings.objects.filter(business_id=business_id).first()
    if cfg is None or cfg.mode != Bitrix24Settings.Mode.APP or not cfg.pending_install:
        return False
    pending = json.loads(cfg.pending_install)
    prover = Bitrix24Client(
        AppAuth(cfg.portal_url, _PendingTokens(pending["access_token"])),
        bucket=portal_bucket(cfg.portal_host, cfg.rate_limit, cfg.burst),
    )
    with prover:
        try:
            prover.call("app.info")
            me = prover.call("user.current").result
        except AuthError:
            log.warning("bitrix24.app_install_rejected", extra={"business_id": business_id})
            Bitrix24Settings.objects.filter(pk=cfg.pk).update(pending_install="")
            return False
    cfg.member_id = pending["member_id"]
    cfg.access_token = pending["access_token"]
    cfg.refresh_token = pending["refresh_token"]
    cfg.application_token = pending["application_token"]
    cfg.access_expires_at = timezone.now() + timedelta(seconds=int(pending["expires_in"] or 3600))
    cfg.pending_install = ""
    cfg.save(
        update_fields=["member_id", "access_token", "refresh_token", "application_token",
                       "access_expires_at", "pending_install"]
    )  # fmt: skip
    with client_for(cfg) as client:
        outcome = client.batch(bind_commands(cfg))
        for key, error in outcome.errors.items():
            if error.code != "ERROR_HANDLER_ALREADY_EXIST":
                log.warning(
                    "bitrix24.event_bind_failed",
                    extra={"business_id": business_id, "binding": key, "code": error.code},
                )
        if cfg.sync_open_channels and cfg.connector_id and cfg.line_id:
            client.call(
                "imconnector.register",
                {
                    "ID": cfg.connector_id,
                    "NAME": "WhatsApp (inbox)",
                    "ICON": {"DATA_IMAGE": ICON},
                    "PLACEMENT_HANDLER": handler_url(),
                },
            )
            client.call(
                "imconnector.activate",
                {"CONNECTOR": cfg.connector_id, "LINE": cfg.line_id, "ACTIVE": 1},
            )
            client.call(
                "imconnector.connector.data.set",
                {
                    "CONNECTOR": cfg.connector_id,
                    "LINE": cfg.line_id,
                    "DATA": {
                        "ID": cfg.connector_id,
                        "URL": settings.PUBLIC_BASE_URL,
                        "NAME": cfg.business.name,
                    },
                },
            )
    user_id = int(me["ID"]) if isinstance(me, dict) and str(me.get("ID", "")).isdigit() else None
    Bitrix24Settings.objects.filter(pk=cfg.pk).update(
        installed_at=timezone.now(), technical_user_id=cfg.technical_user_id or user_id
    )
    log.info("bitrix24.app_installed", extra={"business_id": business_id})
    return True
