"""What a business admin may type into the assistant settings, with the reason when not: the
settings page (inbox/web/settings/admin_pages.py) shows every problem at once, line by line."""

from __future__ import annotations

import re
from collections.abc import Sequence

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
            problems.append(f'Line {number} ("{shown}") has no ":". Write it as '
                            '"code: when to hand the chat to a manager".')  # fmt: skip
            continue
        if not code or not _CODE.match(code) or len(code) > MAX_CODE_CHARS:
            problems.append(f'Line {number}: start with a short code of letters, digits and _, '
                            'e.g. "delivery_question: ...".')  # fmt: skip
            continue
        if not description:
            problems.append(f'Line {number}: "{code}" has no description after the ":"; the '
                            "assistant chooses a reason by its description.")  # fmt: skip
            continue
        if len(description) > MAX_DESCRIPTION_CHARS:
            problems.append(f"Line {number}: the description is longer than "
                            f"{MAX_DESCRIPTION_CHARS} characters.")  # fmt: skip
            continue
        if code in SYSTEM_HANDOFF_REASONS:
            problems.append(f'Line {number}: "{code}" is a reason the system uses itself; '
                            "choose another code.")  # fmt: skip
            continue
        if code in seen:
            problems.append(f'Line {number}: "{code}" is already on line {seen[code]}.')
            continue
        seen[code] = number
        reasons.append({"code": code, "description": description})
    if len(reasons) > MAX_REASONS:
        problems.append(f"At most {MAX_REASONS} handoff reasons.")
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
            problems.append(f'Line {number}: "{phrase}" is too short; it would block almost '
                            f"every reply (at least {MIN_PROMISE_CHARS} characters).")  # fmt: skip
            continue
        if len(phrase) > MAX_PROMISE_CHARS:
            problems.append(f"Line {number}: longer than {MAX_PROMISE_CHARS} characters; "
                            "write the phrase the reply must not contain.")  # fmt: skip
            continue
        key = phrase.lower()
        if key in seen:
            problems.append(f'Line {number}: "{phrase}" is already on line {seen[key]}.')
            continue
        seen[key] = number
        phrases.append(phrase)
    if len(phrases) > MAX_PROMISES:
        problems.append(f"At most {MAX_PROMISES} forbidden promises.")
    return phrases, problems


def check_business_rules(rules: str, promises: Sequence[str]) -> list[str]:
    """Problems with the rules text: too long for the prompt, or stating something that is
    also a forbidden promise (the assistant would quote the rule and then be blocked)."""
    problems: list[str] = []
    if len(rules) > MAX_RULES_CHARS:
        problems.append(f"The rules are {len(rules)} characters; at most {MAX_RULES_CHARS} "
                        "fit the assistant's prompt.")  # fmt: skip
    low = rules.lower()
    for phrase in promises:
        if phrase.lower() in low:
            problems.append(f'The rules say "{phrase}", which is also a forbidden promise: '
                            "remove it from one of the two.")  # fmt: skip
    return problems
