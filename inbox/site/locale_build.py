"""Compiles the translations (`locale/<lang>/LC_MESSAGES/django.po`) into the `.mo` files Django
reads, in pure Python.

Django's `compilemessages` runs GNU gettext's `msgfmt`, a system package a fresh machine may
lack; this does the same for the subset of the PO format our files use (msgctxt, plural forms,
multi-line strings, fuzzy entries skipped), following CPython's Tools/i18n/msgfmt.py. The `.mo`
files are build output (git ignores them): `make venv` (so `make run` and `make test`), the
test session (tests/conftest.py) and the Docker image build them, and a `.mo` older than its
`.po` is rebuilt, so a translation is never stale.

    python -m inbox.site.locale_build        # compile every stale catalogue
"""

from __future__ import annotations

import ast
import struct
import sys
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parents[2] / "locale"


class POError(ValueError):
    pass


def parse(text: str) -> dict[str, str]:
    """The translated entries of a PO file: key (msgctxt\\x04msgid, plural forms joined by NUL)
    to translation. Untranslated and fuzzy entries are left out, as msgfmt leaves them."""
    catalogue: dict[str, str] = {}
    entry: dict[str, list[str]] = {}
    fuzzy = False
    section = ""

    def flush() -> None:
        nonlocal entry, fuzzy
        if "msgid" in entry:
            msgid = "".join(entry["msgid"])
            if "msgid_plural" in entry:
                msgid += "\0" + "".join(entry["msgid_plural"])
                forms = sorted(k for k in entry if k.startswith("msgstr["))
                msgstr = "\0".join("".join(entry[k]) for k in forms)
            else:
                msgstr = "".join(entry.get("msgstr", []))
            if "msgctxt" in entry:
                msgid = "".join(entry["msgctxt"]) + "\x04" + msgid
            if msgstr.strip("\0") and (not fuzzy or msgid == ""):
                catalogue[msgid] = msgstr
        entry, fuzzy = {}, False

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        keyword, _, rest = line.partition(" ")
        starts_entry = not line or line.startswith("#") or keyword in ("msgctxt", "msgid")
        if starts_entry and section.startswith("msgstr"):
            flush()
            section = ""
        if line.startswith("#,") and "fuzzy" in line:
            fuzzy = True
        if not line or line.startswith("#"):
            continue
        if keyword in ("msgctxt", "msgid", "msgid_plural", "msgstr") or keyword.startswith(
            "msgstr["
        ):
            section = keyword
            entry[section] = []
            line = rest.strip()
        elif not line.startswith('"') or not section:
            raise POError(f"line {number}: cannot read {raw!r}")
        try:
            entry[section].append(ast.literal_eval(line))
        except (SyntaxError, ValueError) as exc:
            raise POError(f"line {number}: bad string {line!r}") from exc
    flush()
    return catalogue


def mo_bytes(catalogue: dict[str, str]) -> bytes:
    """The GNU .mo encoding of a catalogue (msgfmt.py's `generate`), keys sorted."""
    keys = sorted(catalogue)
    ids = strs = b""
    offsets: list[tuple[int, int, int, int]] = []
    for key in keys:
        msgid, msgstr = key.encode(), catalogue[key].encode()
        offsets.append((len(ids), len(msgid), len(strs), len(msgstr)))
        ids += msgid + b"\0"
        strs += msgstr + b"\0"
    keystart = 7 * 4 + 16 * len(keys)
    valuestart = keystart + len(ids)
    koffsets: list[int] = []
    voffsets: list[int] = []
    for o1, l1, o2, l2 in offsets:
        koffsets += [l1, o1 + keystart]
        voffsets += [l2, o2 + valuestart]
    header = struct.pack("Iiiiiii", 0x950412DE, 0, len(keys), 7 * 4, 7 * 4 + len(keys) * 8, 0, 0)
    table = struct.pack(f"{len(koffsets)}i", *koffsets) + struct.pack(
        f"{len(voffsets)}i", *voffsets
    )
    return header + table + ids + strs


def compile_file(po: Path) -> Path:
    """Writes the .mo beside a .po; raises POError on a file msgfmt would refuse."""
    mo = po.with_suffix(".mo")
    mo.write_bytes(mo_bytes(parse(po.read_text(encoding="utf-8"))))
    return mo


def compile_all(locale_dir: Path = LOCALE_DIR, *, force: bool = False) -> list[Path]:
    """Every .po whose .mo is missing or older; returns the .mo files written."""
    written = []
    for po in sorted(locale_dir.glob("*/LC_MESSAGES/*.po")):
        mo = po.with_suffix(".mo")
        if force or not mo.exists() or mo.stat().st_mtime < po.stat().st_mtime:
            written.append(compile_file(po))
    return written


if __name__ == "__main__":
    for path in compile_all(force="--force" in sys.argv):
        print(f"compiled {path.relative_to(LOCALE_DIR.parent)}")
