"""What a business admin may type into the assistant settings, with the reason when not: the
settings page (inbox/web/settings/admin_pages.py) shows every problem at once, line by line."""

from __future__ import annotations

import re
from collections.abc import Sequence

from django.utils.translation import gettext

from assistant.models import SYSTEM_HANDOFF_REASONS

MAX_CODE_CHARS = 64
MAX_DESCRIPTION_CHARS = 300
MAX_REASONS = 30
MIN_PROMISE_CHARS = 3
MAX_PROMISE_CHARS = 200
MAX_PROMISES = 200
MAX_RULES_CHARS = 8000
_CODE = re.compile(r"^[a-z0-9_]+$")


def parse_handoff_reasons(text: str) -> tuple[list[dict[str, str]], list[str]]:
    """`code: when to hand over` lines → (reasons, problems). A code is lower-case letters,
    digits and `_` (spaces become `_`); it must be new, not one the system uses itself, and
    come with a description, since the model chooses by the description."""
    reasons: list[dict[str, str]] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        code, colon, description = line.partition(":")
        code = "_".join(code.strip().lower().split())
        description = description.strip()
        shown = line.strip()[:40]
        if not colon:
            problems.append(gettext('Line %(number)s ("%(shown)s") has no ":". Write it as '
                                    '"code: when to hand the chat to a manager".')
                            % {"number": number, "shown": shown})  # fmt: skip
            continue
        if not code or not _CODE.match(code) or len(code) > MAX_CODE_CHARS:
            problems.append(gettext('Line %(number)s: start with a short code of letters, '
                                    'digits and _, e.g. "delivery_question: ...".')
                            % {"number": number})  # fmt: skip
            continue
        if not description:
            problems.append(gettext('Line %(number)s: "%(code)s" has no description after the '
                                    '":"; the assistant chooses a reason by its description.')
                            % {"number": number, "code": code})  # fmt: skip
            continue
        if len(description) > MAX_DESCRIPTION_CHARS:
            problems.append(gettext("Line %(number)s: the description is longer than "
                                    "%(most)s characters.")
                            % {"number": number, "most": MAX_DESCRIPTION_CHARS})  # fmt: skip
            continue
        if code in SYSTEM_HANDOFF_REASONS:
            problems.append(gettext('Line %(number)s: "%(code)s" is a reason the system uses '
                                    "itself; choose another code.")
                            % {"number": number, "code": code})  # fmt: skip
            continue
        if code in seen:
            problems.append(gettext('Line %(number)s: "%(text)s" is already on line %(first)s.')
                            % {"number": number, "text": code, "first": seen[code]})  # fmt: skip
            continue
        seen[code] = number
        reasons.append({"code": code, "description": description})
    if len(reasons) > MAX_REASONS:
        problems.append(gettext("At most %(most)s handoff reasons.") % {"most": MAX_REASONS})
    return reasons, problems


def parse_forbidden_promises(text: str) -> tuple[list[str], list[str]]:
    """One phrase per line → (phrases, problems). A very short phrase would block nearly
    every reply (it is matched inside words too), so it is refused."""
    phrases: list[str] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        phrase = " ".join(line.split())
        if not phrase:
            continue
        if len(phrase) < MIN_PROMISE_CHARS:
            problems.append(gettext('Line %(number)s: "%(phrase)s" is too short; it would block '
                                    "almost every reply (at least %(least)s characters).")
                            % {"number": number, "phrase": phrase,
                               "least": MIN_PROMISE_CHARS})  # fmt: skip
            continue
        if len(phrase) > MAX_PROMISE_CHARS:
            problems.append(gettext("Line %(number)s: longer than %(most)s characters; "
                                    "write the phrase the reply must not contain.")
                            % {"number": number, "most": MAX_PROMISE_CHARS})  # fmt: skip
            continue
        key = phrase.lower()
        if key in seen:
            problems.append(gettext('Line %(number)s: "%(text)s" is already on line %(first)s.')
                            % {"number": number, "text": phrase, "first": seen[key]})  # fmt: skip
            continue
        seen[key] = number
        phrases.append(phrase)
    if len(phrases) > MAX_PROMISES:
        problems.append(gettext("At most %(most)s forbidden promises.") % {"most": MAX_PROMISES})
    return phrases, problems


def check_business_rules(rules: str, promises: Sequence[str]) -> list[str]:
    """Problems with the rules text: too long for the prompt, or stating something that is
    also a forbidden promise (the assistant would quote the rule and then be blocked)."""
    problems: list[str] = []
    if len(rules) > MAX_RULES_CHARS:
        problems.append(gettext("The rules are %(length)s characters; at most %(most)s fit the "
                                "assistant's prompt.")
                        % {"length": len(rules), "most": MAX_RULES_CHARS})  # fmt: skip
    low = rules.lower()
    for phrase in promises:
        if phrase.lower() in low:
            problems.append(gettext('The rules say "%(phrase)s", which is also a forbidden '
                                    "promise: remove it from one of the two.")
                            % {"phrase": phrase})  # fmt: skip
    return problems
