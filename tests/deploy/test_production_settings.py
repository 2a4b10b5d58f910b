"""Production settings pass Django's deployment checklist, and refuse to start half-configured."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]


def _production_env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TESTING", "DEBUG")}
    env.update(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        FIELD_ENCRYPTION_KEY=Fernet.generate_key().decode(),
        ALLOWED_HOSTS="inbox.example.com",
        CSRF_TRUSTED_ORIGINS="https://inbox.example.com",
    )
    env.update(overrides)
    return env


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_check_deploy_is_clean_in_production_settings() -> None:
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=_production_env())

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_refuses_to_start_without_its_secrets(tmp_path: Path) -> None:
    # Neither in the environment nor kept in VAR_DIR (as `make run` keeps them): no key is
    # invented that nobody has a copy of.
    for missing in ("SECRET_KEY", "FIELD_ENCRYPTION_KEY"):
        result = _manage("check", env=_production_env(VAR_DIR=str(tmp_path), **{missing: ""}))

        assert result.returncode != 0
        assert f"{missing} must be set" in result.stderr
        assert list(tmp_path.iterdir()) == []
