"""API tokens: made once and shown once, stored as a SHA-256, checked in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from inbox.conversations.models import ApiToken

TOKEN_PREFIX = "inbx_"
# last_used_at is written at most this often (a busy script must not write on every call).
TOUCH_EVERY = timedelta(minutes=1)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", errors="replace")).hexdigest()


def create_token(user: User, name: str = "") -> tuple[ApiToken, str]:
    """A new token for `user`: returns the row and the token, which is never readable again."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(
        user=user,
        name=name[:200],
        prefix=token[: len(TOKEN_PREFIX) + 6],
        token_hash=hash_token(token),
    )
    return row, token


def authenticate(token: str) -> User | None:
    """The active user owning this token, or None."""
    if not token or len(token) > 200:
        return None
    digest = hash_token(token)
    row = (
        ApiToken.objects.select_related("user")
        .filter(token_hash=digest, is_active=True, user__is_active=True)
        .first()
    )
    if row is None or not hmac.compare_digest(row.token_hash, digest):
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at > TOUCH_EVERY:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row.user
