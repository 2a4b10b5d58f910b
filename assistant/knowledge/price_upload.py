"""Price-list upload between the preview and Apply: one home for both settings pages.

    staged = stage(data, "prices.csv", "KZT", business_id=b.pk, channel_id=None, user=user)
    # ... the user reads staged.preview, then posts staged.token back ...
    staged = take(token, user)          # None: expired, applied already, or not theirs
    version = apply(staged, user)       # raises ImportRejected; the current list stays

What waits in Django's cache (Redis) under a random token for an hour is the parsed preview,
compressed, not the file: Apply writes exactly the rows that were previewed without reading the
file again, and a 9 MB spreadsheet does not sit in a `noeviction` Redis as 9 MB. Each user has at
most one upload waiting (a new one replaces it), tied to them so no one else can apply it.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import zlib
from dataclasses import dataclass
from decimal import Decimal

from django.core.cache import cache
from django.core.exceptions import PermissionDenied

from assistant.knowledge.price_import import (
    ImportPreview,
    ParsedRow,
    RowError,
    apply_price_list,
    parse_price_file,
)
from assistant.models import PriceListVersion
from inbox.conversations.access import User
from inbox.conversations.models import Business, Channel

UPLOAD_TTL_SECONDS = 3600
# token_urlsafe(16) is 22 characters; anything much longer is not ours and never a cache key.
MAX_TOKEN_CHARS = 64


@dataclass(frozen=True)
class StagedUpload:
    """An uploaded file waiting for Apply: its token, its preview and the list it would replace
    (the business's, or one channel's override when channel_id is set)."""

    token: str
    preview: ImportPreview
    business_id: int
    channel_id: int | None
    user_id: int


def stage(
    data: bytes,
    filename: str,
    currency: str,
    *,
    business_id: int,
    channel_id: int | None,
    user: User,
) -> StagedUpload:
    """Parse the file for a preview and keep it for an hour for this user's Apply. Writes no
    price list, even when the preview is clean."""
    if not user.is_authenticated:
        raise PermissionDenied("an upload belongs to a signed-in user")
    user_id = int(user.pk)
    preview = parse_price_file(data, filename, currency)
    token = secrets.token_urlsafe(16)
    previous = cache.get(_user_key(user_id))
    if previous:
        discard(str(previous))
    stored = {
        "preview": _pack(preview),
        "business": business_id,
        "channel": channel_id,
        "user": user_id,
    }
    cache.set_many({_key(token): stored, _user_key(user_id): token}, UPLOAD_TTL_SECONDS)
    return StagedUpload(token, preview, business_id, channel_id, user_id)


def take(token: str, user: User) -> StagedUpload | None:
    """The upload staged under this token; None if it expired, was applied already, was
    replaced by a newer upload, or was staged by another user (whose upload stays theirs)."""
    if not user.is_authenticated:
        return None
    token = token[:MAX_TOKEN_CHARS]
    stored = cache.get(_key(token))
    if not stored or stored.get("user") != user.pk:
        return None
    preview = _unpack(stored["preview"])
    return StagedUpload(token, preview, stored["business"], stored["channel"], stored["user"])


def apply(staged: StagedUpload, user: User) -> PriceListVersion:
    """Write the staged file as the list's new current version, all or nothing, and forget the
    upload so it applies once. Raises ImportRejected if the file has errors: the current list
    stays, and so does the upload."""
    business = Business.objects.get(pk=staged.business_id)
    channel = Channel.objects.get(pk=staged.channel_id) if staged.channel_id else None
    version = apply_price_list(staged.preview, business, channel, user)
    discard(staged.token)
    return version


def discard(token: str) -> None:
    """Forget a staged upload; its token is refused from now on."""
    cache.delete(_key(token[:MAX_TOKEN_CHARS]))


def _key(token: str) -> str:
    return f"price_upload:{token}"


def _user_key(user_id: int) -> str:
    return f"price_upload:user:{user_id}"


def _pack(preview: ImportPreview) -> bytes:
    """The preview as compressed JSON (amounts as exact decimal strings)."""
    data = dataclasses.asdict(preview)
    return zlib.compress(json.dumps(data, default=str, ensure_ascii=False).encode(), 6)


def _unpack(raw: bytes) -> ImportPreview:
    data = json.loads(zlib.decompress(raw))
    rows = tuple(ParsedRow(**{**row, "price": Decimal(row["price"])}) for row in data["rows"])
    return ImportPreview(
        data["source_name"],
        data["sha256"],
        data["columns"],
        rows,
        tuple(RowError(**error) for error in data["errors"]),
        tuple(data["warnings"]),
    )
