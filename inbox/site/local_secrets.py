"""The secrets of a one-box install (`make run`), generated once and kept under VAR_DIR.

`make run` creates them before any process starts; the settings read them whenever SECRET_KEY /
FIELD_ENCRYPTION_KEY are not in the environment, so `python manage.py …` run by hand uses the
same keys as the running stack (sessions stay valid, stored credentials stay readable). Only
`make run`, DEBUG and the tests create them: a production process started without its secrets
and without these files refuses to start instead of inventing a key nobody kept a copy of.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

from cryptography.fernet import Fernet

SECRET_KEY_FILE = "secret_key"
FIELD_ENCRYPTION_KEY_FILE = "field_encryption_key"

_MAKERS: dict[str, Callable[[], str]] = {
    SECRET_KEY_FILE: lambda: secrets.token_urlsafe(50),
    FIELD_ENCRYPTION_KEY_FILE: lambda: Fernet.generate_key().decode(),
}


def read_secret(var_dir: Path, filename: str) -> str:
    """The kept secret, or "" when this install has none yet."""
    path = var_dir / filename
    return path.read_text().strip() if path.exists() else ""


def ensure_secret(var_dir: Path, filename: str) -> str:
    """The kept secret, created (mode 0600) the first time."""
    value = read_secret(var_dir, filename)
    if value:
        return value
    var_dir.mkdir(parents=True, exist_ok=True)
    value = _MAKERS[filename]()
    path = var_dir / filename
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(value)
    return value


def ensure_local_secrets(var_dir: Path) -> None:
    """Every secret a one-box install needs, created once (what `make run` calls first)."""
    for filename in _MAKERS:
        ensure_secret(var_dir, filename)
