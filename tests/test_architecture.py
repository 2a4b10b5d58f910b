"""The layout's rules hold: imports run one way between the packages (import-linter's contracts
in pyproject.toml), no import cycles anywhere in product code, and the database of an
existing installation needs no renamed migrations.

Each check is also shown to fail on a tree that breaks it, so a broken check cannot pass."""

from __future__ import annotations

import ast
import re
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


PRODUCT_PACKAGES = ("inbox", "assistant", "integrations")
ARCHITECTURE_DOC = ROOT / "docs/architecture.md"


def _packages() -> list[Path]:
    return sorted(
        init.parent
        for name in PRODUCT_PACKAGES
        for init in (ROOT / name).rglob("__init__.py")
        if "migrations" not in init.parts
    )


def _named_paths(doc: str) -> set[str]:
    """Every product path the document names: a full one in backticks anywhere, and the rooms of
    the package table, named relative to their row's package (or, inside the parentheses after
    a `sub/` room, relative to that sub-package)."""
    names = set(re.findall(r"`((?:inbox|assistant|integrations)/[\w/]*?(?:\.py|/))`", doc))
    for package, rooms in re.findall(
        r"^\| `((?:inbox|assistant|integrations)/[\w/]*/)` \|(.*)\|$", doc, re.M
    ):
        depth, sub = 0, ""
        for token in re.findall(r"[()]|`[^`]*`", rooms):
            if token in "()":
                depth += 1 if token == "(" else -1
                continue
            room = token.strip("`")
            if not re.fullmatch(r"\w[\w/]*(?:\.py|/)", room):
                continue
            if depth == 0:
                sub = room if room.endswith("/") else ""
                names.add(package + room)
            else:
                names.add(package + sub + room)
    return names


def test_every_module_the_architecture_names_exists() -> None:
    named = _named_paths(ARCHITECTURE_DOC.read_text())
    assert len(named) > 50, "the package table was not read"
    missing = sorted(name for name in named if not (ROOT / name).exists())
    assert not missing, f"docs/architecture.md names what is not in the tree: {missing}"


def test_every_package_is_in_the_architecture() -> None:
    named = _named_paths(ARCHITECTURE_DOC.read_text())
    packages = {str(package.relative_to(ROOT)) + "/" for package in _packages()}
    skipped = {p for p in packages if re.search(r"/(management|commands|templatetags)/$", p)}
    unnamed = sorted(packages - skipped - named - {f"{name}/" for name in PRODUCT_PACKAGES})
    assert not unnamed, f"docs/architecture.md does not describe: {unnamed}"


def test_a_module_the_architecture_names_and_the_tree_lacks_is_found() -> None:
    doc = (
        "| `inbox/conversations/` | `models.py`, `gone_module.py`, `ingest/` (`lost.py`) |\n"
        "`assistant/vanished/`\n"
    )
    named = _named_paths(doc)
    missing = {"inbox/conversations/gone_module.py", "inbox/conversations/ingest/lost.py"}
    assert missing | {"assistant/vanished/", "inbox/conversations/ingest/"} <= named
    assert not any((ROOT / name).exists() for name in missing)


def test_every_package_says_what_it_is() -> None:
    silent = [
        str(package.relative_to(ROOT))
        for package in _packages()
        if not ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
    ]
    assert not silent, f"packages whose __init__.py has no docstring: {silent}"
