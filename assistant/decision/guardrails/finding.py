"""What the guardrail returns: a verdict on a reply (`GuardrailResult`), each thing it could
not prove (`Finding`) and, for the manager's "Why?", how it proved each amount (`Proof`).
Imports nothing of the guardrail's own."""

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


@dataclass(frozen=True)
class Proof:
    amount: str  # as the reply shows it ("180 000 KZT")
    basis: str  # what backs it, in a manager's words ("4 × the list price of Office chair Lux")
