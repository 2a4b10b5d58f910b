"""Batch requests: up to 50 commands in one REST call (one bucket slot), and reading the answer
back per command.

Bitrix24 answers a batch with PHP's idea of a map: `result` and `result_error` may be a map
keyed by command or, when PHP renumbered it, a plain list; commands in neither did not run (the
batch stopped at a failure with `halt`). `parse_batch` maps every shape back to the commands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from integrations.bitrix24.rest import phpquery
from integrations.bitrix24.rest.errors import Bitrix24Error, TransientError, classify

BATCH_LIMIT = 50


@dataclass(frozen=True)
class Command:
    """One batch command. Keys must not be numeric (PHP would turn the map into a list)."""

    key: str
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.key or self.key.isdigit() or not self.key.replace("_", "").isalnum():
            raise ValueError(f"batch command key must be alphanumeric, not numeric: {self.key!r}")

    def query(self) -> str:
        encoded = phpquery.encode(self.params)
        return f"{self.method}?{encoded}" if encoded else self.method


@dataclass
class BatchResult:
    """Per-command outcome of one or more batch requests."""

    results: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, Bitrix24Error] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)

    def merge(self, other: BatchResult) -> None:
        self.results.update(other.results)
        self.errors.update(other.errors)
        self.totals.update(other.totals)


def as_map(value: Any) -> dict[str, Any]:
    """PHP serialises an empty map as `[]` and a 0..n-1 keyed map as a list."""
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value)}
    return {}


def parse_batch(payload: Any, commands: Sequence[Command]) -> BatchResult:
    """Map a batch response back to its commands. `result_error` may be a map keyed by command
    or a list that lost its keys; commands in neither map did not run (`halt`)."""
    body = payload if isinstance(payload, dict) else {}
    by_key = {c.key: c for c in commands}
    outcome = BatchResult()
    outcome.results = {k: v for k, v in as_map(body.get("result")).items() if k in by_key}
    for key, total in as_map(body.get("result_total")).items():
        if key in by_key and str(total).lstrip("-").isdigit():
            outcome.totals[key] = int(total)
    raw_errors = body.get("result_error")
    missing = [c.key for c in commands if c.key not in outcome.results]
    pairs: list[tuple[str, Any]]
    if isinstance(raw_errors, dict):
        pairs = [(str(k), v) for k, v in raw_errors.items() if str(k) in by_key]
    elif isinstance(raw_errors, list):
        # Keys lost: the failed commands are the ones without a result, in command order.
        pairs = list(zip(missing, raw_errors, strict=False))
    else:
        pairs = []
    for key, raw in pairs:
        detail = raw if isinstance(raw, dict) else {}
        outcome.errors[key] = classify(
            None,
            str(detail.get("error") or ""),
            str(detail.get("error_description") or ""),
            method=by_key[key].method,
        )
    for key in missing:
        if key not in outcome.errors:
            outcome.errors[key] = TransientError(
                "NOT_EXECUTED", "the batch stopped before this command", method=by_key[key].method
            )
    return outcome
