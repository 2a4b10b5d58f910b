"""What the guardrail returns: a verdict on a reply (`GuardrailResult`) and each thing it could
not prove (`Finding`). Imports nothing of the guardrail's own."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GuardrailResult:
    allowed: bool
    blocked: list[str]


@dataclass(frozen=True)
class Finding:
    kind: str  # "price" | "percentage" | "deadline" | "promise"
    text: str
