"""The layout's rules hold: imports run one way between the packages (import-linter's contracts
in pyproject.toml), no import cycles anywhere in product code, and the database of an
existing installation needs no renamed migrations.

Each check is also shown to fail on a tree that breaks it, so a broken check cannot pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db.migrations.loader import MigrationLoader

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))

# The migrations an installation of the flat layout (before the restructuring) has applied:
# every one must still exist under the same app label and name, or `migrate` would try to
# create tables that are already there.
RECORDED_MIGRATIONS = {
    ("inbox", "0001_initial"),
    ("inbox", "0002_turn"),
    ("inbox", "0003_api_token"),
    ("inbox", "0004_alerts_retention"),
    ("assistant", "0001_initial"),
    ("bitrix24", "0001_initial"),
}


def _run(*command: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_layer_contracts_hold() -> None:
    result = _run(LINT_IMPORTS, "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_there_are_no_import_cycles() -> None:
    result = _run(PYTHON, "scripts/import_cycles.py")
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().endswith("0 import cycle(s)")


def test_a_cycle_hidden_in_a_function_is_found(tmp_path: Path) -> None:
    package = tmp_path / "loopy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text("from loopy import web\n")
    (package / "web.py").write_text("def view():\n    from loopy import core\n")
    result = subprocess.run(
        [PYTHON, str(ROOT / "scripts/import_cycles.py"), "loopy"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert result.returncode == 1
    assert "loopy.core, loopy.web" in result.stdout


def test_a_core_module_importing_the_web_ui_breaks_the_contract(tmp_path: Path) -> None:
    """Copy the product, make the core import the web UI, and the linter must say no."""
    for name in ("inbox", "assistant", "integrations"):
        subprocess.run(["cp", "-r", str(ROOT / name), str(tmp_path / name)], check=True, timeout=60)
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    hooks = tmp_path / "inbox/conversations/hooks.py"
    hooks.write_text(hooks.read_text() + "\nfrom inbox.web import views  # noqa\n")
    result = _run(LINT_IMPORTS, "--no-cache", cwd=tmp_path)
    assert result.returncode != 0
    assert "inbox.conversations.hooks -> inbox.web.views" in result.stdout


@pytest.mark.django_db
def test_an_existing_database_needs_no_renamed_or_new_migrations() -> None:
    loader = MigrationLoader(None, ignore_no_migrations=True)
    assert set(loader.disk_migrations) >= RECORDED_MIGRATIONS
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
