"""Rate limit on login, per username and client address, kept in Redis (every web process
shares it).

After `LOGIN_MAX_FAILURES` failed attempts for one username from one address within
`LOGIN_WINDOW_SECONDS`, that pair is refused until the window ends, with a message that says
so. The real user on another address is never locked out by someone guessing their password,
and one address guessing many usernames is capped separately (`LOGIN_MAX_FAILURES_PER_ADDRESS`).
A successful login clears the pair's count.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.http import HttpRequest

from inbox.platform.redis import get_redis

log = logging.getLogger(__name__)


def _setting(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR, or the proxy's X-Forwarded-For hop when LOGIN_TRUST_X_FORWARDED_FOR is on
    (only behind a proxy that sets it; otherwise a client could pick its own address). The
    shipped nginx overwrites the header with the address it saw, so the last hop is the client;
    deploy/ turns the trust on (behind nginx REMOTE_ADDR may be nginx itself, one address for
    every client)."""
    if getattr(settings, "LOGIN_TRUST_X_FORWARDED_FOR", False):
        forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR", ""))
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-1]
    return str(request.META.get("REMOTE_ADDR", "") or "unknown")


def digest(value: str) -> str:
    """A short hash that names an address or a username in Redis keys and logs."""
    return hashlib.sha256(value.encode()).hexdigest()[:32]


def _pair_key(username: str, address: str) -> str:
    return f"login:fail:{digest(username.strip().lower())}:{digest(address)}"


def _address_key(address: str) -> str:
    return f"login:fail-addr:{digest(address)}"


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_seconds: int = 0


def check(username: str, address: str) -> Verdict:
    client = get_redis()
    pipe = client.pipeline()
    for key in (_pair_key(username, address), _address_key(address)):
        pipe.get(key)
        pipe.ttl(key)
    pair, pair_ttl, per_address, address_ttl = pipe.execute()
    if pair and int(pair) >= _setting("LOGIN_MAX_FAILURES", 5):
        return Verdict(False, max(int(pair_ttl), 1))
    if per_address and int(per_address) >= _setting("LOGIN_MAX_FAILURES_PER_ADDRESS", 50):
        return Verdict(False, max(int(address_ttl), 1))
    return Verdict(True)


# INCR, and start the window with the first failure (EXPIRE … NX needs Redis 7; the embedded
# Redis of `make run` is 6.2).
_COUNT_FAILURE = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n
"""


def count_in_window(key: str, window_seconds: int) -> int:
    """Add one to `key`'s count and return it; the count ends `window_seconds` after its first
    hit (a fixed window, shared by every process through Redis)."""
    count = get_redis().register_script(_COUNT_FAILURE)
    return int(count(keys=[key], args=[window_seconds]))


def record_failure(username: str, address: str) -> None:
    window = _setting("LOGIN_WINDOW_SECONDS", 900)
    for key in (_pair_key(username, address), _address_key(address)):
        count_in_window(key, window)
    log.info("login.failed", extra={"address_hash": digest(address)[:8]})


def clear(username: str, address: str) -> None:
    get_redis().delete(_pair_key(username, address))


def _minutes(seconds: int) -> str:
    minutes = max(1, -(-seconds // 60))
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


class RateLimitMixin:
    """For AuthenticationForm subclasses: refuse before checking the password while the pair
    is over its limit; count each failure."""

    request: HttpRequest | None

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = self.cleaned_data  # type: ignore[attr-defined]
        username = str(data.get("username") or "")
        address = client_address(self.request) if self.request is not None else "unknown"
        verdict = check(username, address)
        if not verdict.allowed:
            log.warning("login.rate_limited", extra={"address_hash": digest(address)[:8]})
            raise forms.ValidationError(
                "Too many failed attempts to log in as this user from your address. "
                f"Try again in {_minutes(verdict.retry_after_seconds)}.",
                code="rate_limited",
            )
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except forms.ValidationError:
            if username:
                record_failure(username, address)
            raise
        clear(username, address)
        return cleaned


class RateLimitedAuthenticationForm(RateLimitMixin, AuthenticationForm):
    pass


class RateLimitedAdminAuthenticationForm(RateLimitMixin, AdminAuthenticationForm):
    pass


class RateLimitedLoginView(LoginView):
    form_class = RateLimitedAuthenticationForm
    redirect_authenticated_user = True


login = RateLimitedLoginView.as_view()
