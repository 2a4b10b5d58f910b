"""Bitrix24 chat text (BB-code) as WhatsApp text: `[b]Klaus:[/b] [br]Hi` → `*Klaus:*\nHi`."""

from __future__ import annotations

import html
import re

_PAIRS = [
    (re.compile(r"\[b\](.*?)\[/b\]", re.I | re.S), r"*\1*"),
    (re.compile(r"\[i\](.*?)\[/i\]", re.I | re.S), r"_\1_"),
    (re.compile(r"\[s\](.*?)\[/s\]", re.I | re.S), r"~\1~"),
    (re.compile(r"\[u\](.*?)\[/u\]", re.I | re.S), r"\1"),
    (re.compile(r"\[code\](.*?)\[/code\]", re.I | re.S), r"```\1```"),
    (re.compile(r"\[url=([^\]]+)\](.*?)\[/url\]", re.I | re.S), r"\2 (\1)"),
    (re.compile(r"\[url\](.*?)\[/url\]", re.I | re.S), r"\1"),
    (re.compile(r"\[user=\d+\](.*?)\[/user\]", re.I | re.S), r"\1"),
    (re.compile(r"\[quote\](.*?)\[/quote\]", re.I | re.S), r"> \1\n"),
]
_BREAK = re.compile(r"\s*\[br\]\s*", re.I)
_OTHER_TAGS = re.compile(r"\[/?[a-z]+(?:=[^\]]*)?\]", re.I)


def to_whatsapp(text: str) -> str:
    """Convert the BB-code Open Channels sends (bold, italic, links, line breaks, quotes) to
    WhatsApp formatting; unknown tags are dropped, their text kept."""
    out = _BREAK.sub("\n", text or "")
    for pattern, replacement in _PAIRS:
        out = pattern.sub(replacement, out)
    out = _OTHER_TAGS.sub("", out)
    out = html.unescape(out)
    lines = [line.rstrip() for line in out.splitlines()]
    return "\n".join(lines).strip()
