"""How requests to a portal are addressed and signed, and the OAuth token refresh.

An incoming webhook (`WebhookAuth`) carries its secret in the URL; a local application
(`AppAuth`) signs each request with an OAuth access token that `refresh_oauth` renews. Portal
URLs are typed by business admins: every request is checked against the egress rule first
(`check_egress`) and goes through a pinned client (`inbox.platform.http`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from inbox.platform import egress, http
from integrations.bitrix24.rest.errors import AuthError, PermanentError, TransientError

log = logging.getLogger(__name__)

USER_AGENT = "whatsapp-operator-inbox/0.1 (+bitrix24 sync)"


class TokenSource(Protocol):
    """Where an application's OAuth access token comes from (connection.py keeps them)."""

    def access_token(self) -> str: ...

    def refresh(self, stale: str) -> str:
        """Return a valid token; refresh it unless another worker already did."""
        ...


class Auth(Protocol):
    @property
    def portal_host(self) -> str: ...

    def url(self, method: str) -> str: ...

    def sign(self, payload: dict[str, Any]) -> dict[str, Any]: ...

    def refresh(self, payload: dict[str, Any]) -> bool: ...


@dataclass(frozen=True)
class WebhookAuth:
    """An incoming webhook `https://{portal}/rest/{user}/{code}/`. `repr` hides the code."""

    base_url: str = field(repr=False)

    @property
    def portal_host(self) -> str:
        return urlsplit(self.base_url).netloc

    def url(self, method: str) -> str:
        return f"{self.base_url.rstrip('/')}/{method}.json"

    def sign(self, payload: dict[str, Any]) -> dict[str, Any]:
        return payload

    def refresh(self, payload: dict[str, Any]) -> bool:
        return False


@dataclass
class AppAuth:
    """A local application: `https://{portal}/rest/{method}` with `auth=<access token>`."""

    portal_url: str
    tokens: TokenSource = field(repr=False)

    @property
    def portal_host(self) -> str:
        return urlsplit(self.portal_url).netloc

    def url(self, method: str) -> str:
        return f"{self.portal_url.rstrip('/')}/rest/{method}.json"

    def sign(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {**payload, "auth": self.tokens.access_token()}

    def refresh(self, payload: dict[str, Any]) -> bool:
        self.tokens.refresh(str(payload.get("auth") or ""))
        return True


def http_timeout() -> httpx.Timeout:
    return http.timeouts(float(getattr(settings, "BITRIX24_HTTP_TIMEOUT", 30.0)))


def refresh_oauth(
    oauth_url: str,
    *,
    client_id: str,
    client_secret: str,
    refresh_token: str,
) -> dict[str, Any]:
    """Exchange a refresh token for new tokens at the OAuth server. The old refresh token stops
    working, so callers serialise this (connection.py holds a row lock around it)."""
    check_egress(oauth_url, "oauth.token")
    try:
        with http.client(
            timeout=http_timeout(), headers={"User-Agent": USER_AGENT}, pinned=True
        ) as client:
            reply = client.get(
                f"{oauth_url.rstrip('/')}/oauth/token/",
                params={
                    "grant_type": "refresh_token",
                    "client_id": client_id,
                    "client_secret": client_secret,
                    "refresh_token": refresh_token,
                },
            )
    except httpx.TransportError as exc:
        raise TransientError("NETWORK", type(exc).__name__, method="oauth.token") from None
    try:
        body = reply.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise TransientError("NON_JSON_RESPONSE", f"HTTP {reply.status_code}", method="oauth.token")
    if "error" in body or not body.get("access_token"):
        code = str(body.get("error") or "oauth_error")
        if reply.status_code >= 500:
            raise TransientError(code, "", status=reply.status_code, method="oauth.token")
        raise AuthError(
            code,
            str(body.get("error_description") or ""),
            status=reply.status_code,
            method="oauth.token",
        )
    log.info("bitrix24.oauth_refreshed", extra={"portal": urlsplit(oauth_url).netloc})
    return body


def check_egress(url: str, method: str) -> None:
    """A portal URL typed by a business admin may not point inside this network."""
    try:
        egress.check(url)
    except egress.EgressRefused as exc:
        raise PermanentError("EGRESS_REFUSED", str(exc), method=method) from None
