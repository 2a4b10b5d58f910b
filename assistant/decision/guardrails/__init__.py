"""The last check before a reply leaves (`check.py`); split by responsibility in the next step."""

from assistant.decision.guardrails.check import (
    Finding,
    GuardrailResult,
    check,
    check_against,
    dates,
    deadlines,
    find_amounts_free,
    findings,
    times,
)

__all__ = [
    "Finding",
    "GuardrailResult",
    "check",
    "check_against",
    "dates",
    "deadlines",
    "find_amounts_free",
    "findings",
    "times",
]
