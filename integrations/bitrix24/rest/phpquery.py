"""PHP `http_build_query` bracket encoding, both ways.

Bitrix24 reads nested parameters as `fields[TITLE]=x&select[0]=ID`: batch commands are such
query strings, and outbound events arrive as such form bodies. Plain `urlencode` on a nested
dict gets it wrong, and hand-built strings break on `&`, `=` and Cyrillic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote_plus

__all__ = ["Raw", "TooManyFields", "decode", "encode", "field_count", "result_ref", "scalar"]


class Raw(str):
    """A value written into the query unencoded: batch `$result[key][field]` references, which
    Bitrix24 substitutes in the raw command string before parsing it."""

    __slots__ = ()


def result_ref(key: str, *path: str | int) -> Raw:
    """`result_ref("deal", "item", "id")` → `$result[deal][item][id]` (an earlier command's
    result, filled in by Bitrix24 inside the same batch)."""
    return Raw(f"$result[{key}]" + "".join(f"[{part}]" for part in path))


def scalar(value: Any) -> str:
    """One leaf value as Bitrix24 expects it: booleans as Y/N, None as empty."""
    if value is True:
        return "Y"
    if value is False:
        return "N"
    if value is None:
        return ""
    return str(value)


def _pairs(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            _pairs(f"{prefix}[{key}]" if prefix else str(key), item, out)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _pairs(f"{prefix}[{index}]", item, out)
    elif isinstance(value, Raw):
        out.append((prefix, value))
    else:
        out.append((prefix, scalar(value)))


def encode(params: Mapping[str, Any]) -> str:
    """`{"fields": {"TITLE": "Заказ & co"}}` → `fields%5BTITLE%5D=%D0%97...%26%20co`.

    Lists get explicit indexes (PHP reads `fm[0]` as a list and `fm[n0]` as a map, which
    Bitrix24 treats differently). Empty lists and maps produce nothing, as in PHP."""
    pairs: list[tuple[str, str]] = []
    _pairs("", params, pairs)
    return "&".join(
        f"{quote(key, safe='[]')}={value if isinstance(value, Raw) else quote(value, safe='')}"
        for key, value in pairs
    )


# PHP's `max_input_nesting_level`: a variable nested deeper is dropped, as PHP itself does. A few
# KB of `a[][][]…` would otherwise nest past Python's recursion limit before any token check.
MAX_NESTING = 64


def _path(key: str) -> list[str]:
    """`data[FIELDS][ID]` → ["data", "FIELDS", "ID"]; `a[]` → ["a", ""]."""
    head, bracket, rest = key.partition("[")
    if not bracket or not head:
        return [key]
    parts = [head]
    rest = "[" + rest
    while rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            # PHP keeps an unterminated bracket as part of the last name.
            parts[-1] += rest
            break
        parts.append(rest[1:end])
        rest = rest[end + 1 :]
        if len(parts) > MAX_NESTING + 1:
            return []
    return parts


# A key PHP stores as an integer: canonical ASCII decimal within a 64-bit signed integer ("7",
# "-3"; not "07", "+7", "1e3", "²" or 20 digits). Anything else stays a string key.
_PHP_INT_KEY = re.compile(r"-?(?:0|[1-9][0-9]{0,18})", re.ASCII)
_PHP_INT_MAX = 2**63 - 1


def _php_int(key: str) -> int | None:
    if len(key) > 20 or not _PHP_INT_KEY.fullmatch(key):
        return None
    number = int(key)
    return number if -_PHP_INT_MAX - 1 <= number <= _PHP_INT_MAX else None


class _Node(dict[str, Any]):
    """One array being built, with PHP's `nNextFreeElement`: the index `key[]` gets next (the
    largest integer key so far + 1). Counting the siblings instead made each `a[]` cost as many
    steps as the `a[]`s before it: 20,000 of them in a 100 KB body took 31 s of CPU."""

    __slots__ = ("next_index",)

    def __init__(self) -> None:
        super().__init__()
        self.next_index = 0

    def put(self, key: str, value: Any) -> None:
        self[key] = value
        number = _php_int(key)
        if number is not None and number >= self.next_index:
            self.next_index = number + 1


def _insert(target: _Node, path: list[str], value: str) -> None:
    node = target
    for depth, part in enumerate(path):
        if part == "":
            part = str(node.next_index)
        if depth == len(path) - 1:
            node.put(part, value)
            return
        child = node.get(part)
        if not isinstance(child, _Node):
            child = _Node()
            node.put(part, child)
        node = child


def _listify(node: Any) -> Any:
    """Maps keyed 0..n-1 become lists, as PHP's array_is_list would see them."""
    if not isinstance(node, dict):
        return node
    converted = {key: _listify(value) for key, value in node.items()}
    keys = list(converted)
    if keys and keys == [str(i) for i in range(len(keys))]:
        return [converted[k] for k in keys]
    return converted


class TooManyFields(ValueError):
    """A form body with more fields than the caller takes (PHP's `max_input_vars`)."""


def field_count(body: str | bytes) -> int:
    """How many `&`-separated pairs a form body has at most, counted without parsing it (empty
    pairs included): cheap enough to run on any body before deciding to parse it."""
    return (body.count("&") if isinstance(body, str) else body.count(b"&")) + 1


def decode(body: str, max_fields: int | None = None) -> dict[str, Any]:
    """A form body (`event=…&data[FIELDS][ID]=7&auth[domain]=…`) as nested dicts and lists.

    Linear in the body's length. With `max_fields`, a body of more pairs raises `TooManyFields`
    before any of it is parsed (PHP would drop the rest with a warning; a caller that answers
    strangers refuses the whole body instead)."""
    if max_fields is not None and field_count(body) > max_fields:
        raise TooManyFields(f"more than {max_fields} form fields")
    result = _Node()
    for chunk in body.split("&"):
        if not chunk:
            continue
        raw_key, _, raw_value = chunk.partition("=")
        key = unquote_plus(raw_key)
        path = _path(key) if key else []
        if path:
            _insert(result, path, unquote_plus(raw_value))
    converted = _listify(result)
    return converted if isinstance(converted, dict) else {}
