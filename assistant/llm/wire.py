"""What goes over the wire to a model server and comes back: the request's structured-output
format, reading the answer (streamed server-sent events or one JSON body), and turning the text
into a validated Decision.

`response_format` asks vLLM for `json_schema` (guided decoding with the Decision's schema) or
llama.cpp for `json_object` with an inlined schema (its grammar). `read_streamed` reads the
events as plain JSON (the openai library's typed chunks cost ~60 µs each) and stops a server
that drips tokens past the whole-request timeout; an error event or an unreadable chunk is a
`TransientModelError`, as a dropped connection is. `parse_decision` says what is wrong with an
answer in words the repair prompt shows the model.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, cast

import openai
from pydantic import ValidationError

from assistant.llm.errors import TransientModelError
from assistant.llm.prompt import inline_schema
from assistant.schema import Action, Decision

Messages = list[dict[str, str]]


class MessagesFor(Protocol):
    def __call__(self, structured_output: str, /, compact: bool = False) -> Messages: ...


@dataclass
class Raw:
    """One answer as read off the wire, before it is parsed."""

    content: str
    replica: str
    latency_s: float
    ttft_s: float | None
    tokens_in: int
    tokens_out: int
    finish_reason: str


def parse_decision(content: str) -> tuple[Decision | None, str]:
    """(decision, "") or (None, what is wrong), for the repair prompt."""
    text = content.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    if not text:
        return None, "the answer was empty"
    try:
        # strict=False: a raw newline inside a string (llama.cpp's JSON grammar allows it)
        # is still the text the model meant.
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        return None, f"the answer is not valid JSON ({exc.msg} at position {exc.pos})"
    if not isinstance(value, dict):
        return None, "the answer must be a JSON object"
    try:
        decision = Decision.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'object'}: {e['msg']}" for e in exc.errors()
        )
        return None, f"the JSON does not match the format: {problems}"
    if (
        decision.action in (Action.ANSWER, Action.CLARIFY)
        and not decision.reply_to_customer.strip()
    ):
        return None, "reply_to_customer is empty"
    return decision, ""


def grammar_schema() -> dict[str, Any]:
    """The schema llama.cpp's server is given for its grammar (`prompt.inline_schema`)."""
    return inline_schema()


@functools.cache
def _decision_schema() -> dict[str, Any]:
    return Decision.model_json_schema()


def response_format(mode: str) -> dict[str, Any]:
    if mode == "json_object":
        # llama.cpp's server turns `schema` into a grammar (inlined: see prompt.inline_schema);
        # others ignore the extra key. vLLM gets json_schema: guided decoding takes $defs.
        return {"type": "json_object", "schema": grammar_schema()}
    schema = _decision_schema()
    return {
        "type": "json_schema",
        "json_schema": {"name": "decision", "schema": schema, "strict": True},
    }


def read_streamed(
    client: openai.OpenAI, kwargs: dict[str, Any], replica: str, started: float, timeout: float
) -> Raw:
    """The answer read off the server-sent events as plain JSON. The openai library's own
    stream builds a typed object per chunk (about 60 µs each, most of a turn's overhead
    outside the model with a fast server); the request and its errors stay the library's.
    `timeout` bounds the whole answer (the client's read timeout is per chunk)."""
    parts: list[str] = []
    ttft: float | None = None
    tokens_in = tokens_out = 0
    finish = ""
    request = client.chat.completions.with_streaming_response.create(
        **kwargs, stream=True, stream_options={"include_usage": True}
    )
    with request as response:
        for event, data in sse_events(response.iter_lines()):
            if time.monotonic() - started > timeout:
                # The read timeout is per chunk; a server dripping tokens must not hold
                # the turn longer than the whole-request timeout.
                raise TransientModelError("timeout (stream too slow)")
            if data == "[DONE]":
                break
            chunk = stream_chunk(event, data)
            choices = chunk.get("choices") or []
            if choices and isinstance(choices[0], dict):
                choice = choices[0]
                delta = (choice.get("delta") or {}).get("content")
                if delta:
                    if ttft is None:
                        ttft = time.monotonic() - started
                    parts.append(str(delta))
                if choice.get("finish_reason"):
                    finish = str(choice["finish_reason"])
            usage = chunk.get("usage")
            if isinstance(usage, dict):
                tokens_in = int(usage.get("prompt_tokens") or 0)
                tokens_out = int(usage.get("completion_tokens") or 0)
    content = "".join(parts)
    if not tokens_in:
        tokens_in = estimate_tokens(kwargs["messages"])
        tokens_out = tokens_out or len(content) // 4
    return Raw(content, replica, time.monotonic() - started, ttft, tokens_in, tokens_out, finish)


def read_whole(client: openai.OpenAI, kwargs: dict[str, Any], replica: str, started: float) -> Raw:
    """The answer as one JSON body (LLM_STREAM off)."""
    response = cast(Any, client.chat.completions.create(**kwargs))
    choice = response.choices[0] if response.choices else None
    content = (choice.message.content or "") if choice else ""
    usage = response.usage
    tokens_in = usage.prompt_tokens if usage else estimate_tokens(kwargs["messages"])
    tokens_out = usage.completion_tokens if usage else len(content) // 4
    finish = (choice.finish_reason or "") if choice else ""
    return Raw(content, replica, time.monotonic() - started, None, tokens_in, tokens_out, finish)


def sse_events(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(event type, data) of each server-sent event: data lines joined, comments and unknown
    fields skipped (the text/event-stream format; vLLM and llama.cpp send one data line each)."""
    event, data = "", list[str]()
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "", list[str]()
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "error":  # llama.cpp's server reports a failure mid-stream on such a line
            yield "error", value
    if data:
        yield event, "\n".join(data)


def stream_chunk(event: str, data: str) -> dict[str, Any]:
    """One streamed chunk; an error event (vLLM and llama.cpp report a failure mid-stream that
    way) or an unreadable chunk is worth a retry elsewhere, as a dropped connection is."""
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        raise TransientModelError("unreadable stream chunk") from exc
    if not isinstance(chunk, dict):
        raise TransientModelError("unreadable stream chunk")
    error = chunk.get("error")
    if event == "error" or error or chunk.get("object") == "error":
        detail = error.get("message") if isinstance(error, dict) else error or chunk.get("message")
        raise TransientModelError(f"stream error: {str(detail or data)[:200]}")
    return chunk


def error_text(exc: openai.APIStatusError) -> str:
    """The server's error message (and type), whatever shape its JSON body has."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            text = " ".join(str(inner.get(k) or "") for k in ("message", "type", "code"))
            if text.strip():
                return text.strip()
        return json.dumps(body, ensure_ascii=False)[:1000]  # e.g. FastAPI's {"detail": […]}
    try:
        return exc.response.text[:1000]
    except Exception:
        return str(exc)


def estimate_tokens(messages: Messages) -> int:
    return sum(len(m.get("content", "")) for m in messages) // 4
