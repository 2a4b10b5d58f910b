"""Model fields for credentials: encrypted at rest, never shown back in forms or logs."""

from __future__ import annotations

from functools import cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models


@cache
def _fernet() -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in settings.FIELD_ENCRYPTION_KEYS])


def encrypt(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise ValueError("stored secret cannot be decrypted with FIELD_ENCRYPTION_KEY") from exc


class EncryptedTextField(models.TextField):  # type: ignore[type-arg]
    """A text column stored as a Fernet token. Empty strings stay empty (no secret set)."""

    description = "Encrypted text"

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str | None:
        if value is None or value == "":
            return value
        return decrypt(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt(str(value))


def mask_secret(value: str) -> str:
    """What the UI and logs may show of a secret: whether it is set, and its last 4 characters."""
    if not value:
        return ""
    return "•" * 8 + value[-4:] if len(value) > 12 else "•" * 8
