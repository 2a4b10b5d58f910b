"""Compiles the translations (`locale/<lang>/LC_MESSAGES/django.po`) into the `.mo` files Django
reads, in pure Python.

Django's `compilemessages` runs GNU gettext's `msgfmt`, a system package a fresh machine may
lack; this does the same for the subset of the PO format our files use (msgctxt, plural forms,
multi-line strings, fuzzy entries skipped), following CPython's Tools/i18n/msgfmt.py. The `.mo`
files are build output (git ignores them): `make venv` (so `make run` and `make test`), the
test session (tests/conftest.py) and the Docker image build them, and a `.mo` older than its
`.po` is rebuilt, so a translation is never stale.

    python -m inbox.site.locale_build            # compile every stale catalogue
    python -m inbox.site.locale_build --extract  # add newly marked strings to every .po

`--extract` stands in for `makemessages`, which cannot read the Jinja2 templates' `_()` calls:
it collects `{% translate %}`/`{% blocktranslate %}` (templates/), `_("...")` (jinja_templates/)
and the gettext calls of our Python packages, keeps every translation already written, and
leaves a new string's msgstr empty (English is shown until someone translates it).
"""

from __future__ import annotations

import ast
import re
import struct
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCALE_DIR = ROOT / "locale"
SOURCES = ("templates", "jinja_templates", "inbox", "assistant", "integrations")
GETTEXT_CALLS = frozenset({"_", "gettext", "gettext_lazy", "gettext_noop"})
PLURAL_FORMS = {
    "ru": "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
    "(n%100<10 || n%100>=20) ? 1 : 2);",
    "kk": "nplurals=2; plural=(n != 1);",
}
_STRING = r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\''
_TRANSLATE = re.compile(
    r"\{%\s*translate\s+(?:" + _STRING + r")(?:\s+context\s+(?:" + _STRING + r"))?"
)
_BLOCK = re.compile(r"\{%\s*blocktranslate\b[^%]*%\}(.*?)\{%\s*endblocktranslate\s*%\}", re.S)
_CALL = re.compile(r"\b_\(\s*(?:" + _STRING + r")")
_VARIABLE = re.compile(r"\{\{\s*(\w+)\s*\}\}")


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


Key = tuple[str, str]  # (msgctxt, msgid)


def _literal(double: str | None, single: str | None) -> str:
    text = double if double is not None else (single or "")
    return text.replace('\\"', '"').replace("\\'", "'").replace("\\\\", "\\")


def template_strings(text: str) -> list[Key]:
    """The msgids of a template, Django's or Jinja2's, in order of appearance."""
    found: list[tuple[int, Key]] = []
    for m in _TRANSLATE.finditer(text):
        found.append(
            (m.start(), (_literal(m[3], m[4]) if m[3] or m[4] else "", _literal(m[1], m[2])))
        )
    for m in _BLOCK.finditer(text):
        body = _VARIABLE.sub(r"%(\1)s", m[1].replace("%", "%%"))
        found.append((m.start(), ("", body)))
    for m in _CALL.finditer(text):
        found.append((m.start(), ("", _literal(m[1], m[2]))))
    return [key for _, key in sorted(found)]


def python_strings(text: str) -> list[Key]:
    """The literal first arguments of gettext calls in a Python module."""
    keys: list[Key] = []
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in GETTEXT_CALLS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            keys.append(("", node.args[0].value))
    return keys


def extract(root: Path = ROOT) -> dict[Key, list[str]]:
    """Every marked string of the project, with the files it appears in."""
    where: dict[Key, list[str]] = {}
    for folder in SOURCES:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix == ".html":
                keys = template_strings(path.read_text(encoding="utf-8"))
            elif path.suffix == ".py" and "migrations" not in path.parts:
                text = path.read_text(encoding="utf-8")
                keys = python_strings(text) if "django.utils.translation" in text else []
            else:
                continue
            for key in keys:
                if key[1]:
                    where.setdefault(key, []).append(str(path.relative_to(root)))
    return where


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def write_po(path: Path, language: str, entries: Iterable[tuple[Key, list[str], str]]) -> None:
    lines = [
        'msgid ""',
        'msgstr ""',
        '"Project-Id-Version: whatsapp-inbox\\n"',
        '"Language-Team: none\\n"',
        '"MIME-Version: 1.0\\n"',
        '"Content-Transfer-Encoding: 8bit\\n"',
        '"Content-Type: text/plain; charset=UTF-8\\n"',
        f'"Language: {language}\\n"',
        f'"Plural-Forms: {PLURAL_FORMS.get(language, "nplurals=2; plural=(n != 1);")}\\n"',
    ]
    for (context, msgid), files, msgstr in entries:
        lines.append("")
        lines += [f"#: {name}" for name in sorted(set(files))]
        if "%(" in msgid:
            lines.append("#, python-format")
        if context:
            lines.append(f"msgctxt {_quote(context)}")
        lines += [f"msgid {_quote(msgid)}", f"msgstr {_quote(msgstr)}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def update_catalogues(locale_dir: Path = LOCALE_DIR) -> None:
    """Every .po gets the project's marked strings; translations already written are kept."""
    marked = extract()
    for po in sorted(locale_dir.glob("*/LC_MESSAGES/django.po")):
        known = parse(po.read_text(encoding="utf-8"))
        entries = []
        for (context, msgid), files in marked.items():
            key = f"{context}\x04{msgid}" if context else msgid
            entries.append(((context, msgid), files, known.get(key, "")))
        write_po(po, po.parent.parent.name, entries)


if __name__ == "__main__":
    if "--extract" in sys.argv:
        update_catalogues()
    for path in compile_all(force="--force" in sys.argv):
        print(f"compiled {path.relative_to(LOCALE_DIR.parent)}")
