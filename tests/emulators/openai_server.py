"""An OpenAI-compatible chat-completions server for tests and benchmarks, over real HTTP.

It speaks the wire format vLLM serves (`POST /v1/chat/completions`, streaming as server-sent
events and not, `GET /v1/models`, a vLLM-style `GET /metrics`), with scripted answers and the
failure modes a real server has: slow first token and slow tokens, HTTP 5xx, connection refused
(the server stopped), a dropped connection, invalid JSON (output cut off by `max_tokens`), a
reply that invents a price, and llama.cpp's HTTP 500 for `response_format` json_schema.

Configuration errors, with the bodies the real servers send: `Step.bad_key()` (401),
`Step.unknown_model()` (404, vLLM's "The model `x` does not exist."), `Step.context_too_long()`
(400, vLLM's "This model's maximum context length is …" or, with `server="llama.cpp"`,
llama.cpp's `exceed_context_size_error` body), `Step.schema_rejected()` (422) and
`Step.rate_limited(retry_after)` (429 with a Retry-After header). `max_model_len=N` makes the
server itself answer vLLM's context-length 400 to every request whose prompt (≈ 4 characters a
token) plus `max_tokens` is over N, as vLLM does.

    with OpenAIEmulator() as emu:              # 127.0.0.1, a free port, a background thread
        client = OpenAI(base_url=emu.base_url, api_key="x")
        emu.script(Step.server_error(503), Step.reply(decision_json(reply="Hi")))
        ...
        emu.requests[-1].cache_salt           # what the client sent, for assertions

Answers, in order of precedence: the scripted steps (one per request, first in first out), then
`emu.responder(request) -> Step` when set, then the default "echo decision" mode: an instant,
valid Decision JSON (`action` answer, `reply_to_customer` "Echo: " + the last line of the last
user message without its "[time] Customer:" prefix, at most 200 characters).

Structured output is honoured like vLLM does it: with `response_format` json_schema (or
llama.cpp's json_object + `schema`) every scripted JSON answer is validated against the schema
the request carried; an answer that does not validate is a bug in the test's script, so the
server answers HTTP 500 with `script error: ...` in the message and records it in
`emu.script_errors`. Only `Step.invalid_json()` bypasses that, because vLLM's constrained
decoding can still emit broken JSON when generation stops at `max_tokens` (finish_reason
"length").

`/metrics` is computed from the traffic served:
- `vllm:num_requests_running` / `vllm:num_requests_waiting`: at most `max_num_seqs` requests are
  "running" at once (a semaphore); the others wait, as in vLLM's scheduler.
- `vllm:kv_cache_usage_perc`: prompt + generated tokens of the running requests over
  `kv_cache_tokens`.
- `vllm:prefix_cache_queries_total` / `vllm:prefix_cache_hits_total` (tokens): the prompt is
  rendered as a chat template would (`<|role|>\\ncontent\\n` per message) and cut into blocks of 16
  tokens, a token approximated as 4 characters (64 characters a block). Like vLLM, a block hits
  when the hash of the whole prefix up to and including it was seen before *with the same
  cache_salt* (requests without a salt share one space); hits stop at the first miss. Only full
  blocks are cached, and nothing is ever evicted.
- `vllm:time_to_first_token_seconds` and `vllm:e2e_request_latency_seconds` histograms,
  `vllm:prompt_tokens_total`, `vllm:generation_tokens_total`, `vllm:request_success_total`.

Run it by hand for benchmarks: `python -m tests.emulators.openai_server --port 8011`.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.emulators.http import EmulatorServer

CHARS_PER_TOKEN = 4
BLOCK_TOKENS = 16
BLOCK_CHARS = BLOCK_TOKENS * CHARS_PER_TOKEN
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0)  # fmt: skip
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0)


# --- what to answer -------------------------------------------------------------------------


def decision_json(
    action: str = "answer",
    reply: str = "Thank you for your message.",
    reason: str = "",
    summary: str = "",
    facts: dict[str, Any] | None = None,
    reading: dict[str, Any] | None = None,
) -> str:
    """A valid Decision as the model would write it; `reading` defaults to an empty one (the
    grammar has the model write one every time), and its missing keys are empty lists."""
    return json.dumps(
        {
            "reading": {"intents": [], "negated": [], "items": [], **(reading or {})},
            "action": action,
            "reason": reason,
            "summary": summary,
            "reply_to_customer": reply,
            "facts": facts or {"name": None, "city": None, "items": []},
        },
        ensure_ascii=False,
    )


@dataclass
class Step:
    """One scripted answer. `content` None means the echo decision."""

    content: str | None = None
    status: int = 200
    error_message: str = ""
    delay: float = 0.0  # seconds before the response starts (queueing + prefill)
    token_delay: float = 0.0  # seconds between streamed tokens (spread over the body otherwise)
    drop_connection: bool = False  # close the socket without an answer
    finish_reason: str = "stop"
    skip_schema_check: bool = False
    error_type: str = "InternalServerError"
    error_body: dict[str, Any] | None = None  # the whole JSON body of an error, when given
    headers: dict[str, str] | None = None  # extra response headers (Retry-After)
    # Streamed: after this many tokens the engine fails and the server sends an error event
    # (vLLM's `data: {"error": {...}}`, then `[DONE]`) instead of the rest; -1 never.
    fail_after_tokens: int = -1

    @classmethod
    def reply(cls, content: str, **kwargs: Any) -> Step:
        return cls(content=content, **kwargs)

    @classmethod
    def decision(cls, **kwargs: Any) -> Step:
        timing = {k: kwargs.pop(k) for k in ("delay", "token_delay") if k in kwargs}
        return cls(content=decision_json(**kwargs), **timing)

    @classmethod
    def server_error(cls, status: int = 500, message: str = "internal error") -> Step:
        return cls(status=status, error_message=message)

    @classmethod
    def bad_key(cls) -> Step:
        """vLLM with --api-key, called with another key."""
        return cls(status=401, error_message="Unauthorized", error_type="AuthenticationError")

    @classmethod
    def unknown_model(cls, model: str = "assistant") -> Step:
        return cls(
            status=404,
            error_message=f"The model `{model}` does not exist.",
            error_type="NotFoundError",
        )

    @classmethod
    def context_too_long(
        cls, max_len: int = 4096, prompt_tokens: int = 5000, max_tokens: int = 512,
        server: str = "vllm",
    ) -> Step:  # fmt: skip
        """The prompt does not fit: vLLM's 400, or llama.cpp's own server's."""
        if server == "llama.cpp":
            body = {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": prompt_tokens,
                    "n_ctx": max_len,
                }
            }
            return cls(status=400, error_body=body)
        return cls(status=400, error_message=context_message(max_len, prompt_tokens, max_tokens),
                   error_type="BadRequestError")  # fmt: skip

    @classmethod
    def schema_rejected(cls) -> Step:
        """A server that cannot compile the request's schema (pydantic-style 422 detail)."""
        body = {
            "detail": [
                {
                    "type": "literal_error",
                    "loc": ["body", "response_format", "type"],
                    "msg": "Input should be 'text' or 'json_object'",
                    "input": "json_schema",
                }
            ]
        }
        return cls(status=422, error_body=body)

    @classmethod
    def rate_limited(cls, retry_after: float = 1.0) -> Step:
        return cls(
            status=429,
            error_message="Too many requests",
            error_type="RateLimitError",
            headers={"Retry-After": f"{retry_after:g}"},
        )

    @classmethod
    def slow(cls, delay: float, token_delay: float = 0.0, content: str | None = None) -> Step:
        return cls(content=content, delay=delay, token_delay=token_delay)

    @classmethod
    def dropped(cls) -> Step:
        return cls(drop_connection=True)

    @classmethod
    def failed_mid_stream(cls, after_tokens: int = 3) -> Step:
        """The engine fails while streaming (a worker crashed): HTTP 200 already went out, so
        the failure arrives as an error event in the stream."""
        return cls(fail_after_tokens=after_tokens)

    @classmethod
    def invalid_json(cls) -> Step:
        """Output cut off mid-object, as when generation hits max_tokens."""
        whole = decision_json(reply="Sure, the price of the oak table is")
        return cls(content=whole[: len(whole) // 2], finish_reason="length", skip_schema_check=True)

    @classmethod
    def not_json(cls, text: str = "Sure! Happy to help with that.") -> Step:
        """Prose instead of JSON: what an unconstrained small model often writes."""
        return cls(content=text, skip_schema_check=True)

    @classmethod
    def wrong_schema(cls) -> Step:
        """Valid JSON that is not a Decision (no constrained decoding on the server)."""
        return cls(content=json.dumps({"answer": "yes", "confidence": 0.9}), skip_schema_check=True)

    @classmethod
    def invented_price(cls, price: str = "15 000 KZT", item: str = "this item") -> Step:
        return cls(content=decision_json(reply=f"Good news: {item} costs {price} today."))


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float

    @property
    def cache_salt(self) -> str | None:
        salt = self.body.get("cache_salt")
        return str(salt) if salt is not None else None

    @property
    def response_format(self) -> dict[str, Any] | None:
        rf = self.body.get("response_format")
        return rf if isinstance(rf, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))


# --- a minimal JSON Schema validator (the subset pydantic emits) -----------------------------


def schema_errors(
    value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None
) -> list[str]:
    """Errors of `value` against `schema`. Supports type, enum, const, properties, required,
    additionalProperties, items, min/maxLength, minimum/maximum, any/one/allOf, local $ref."""
    root = root or schema
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return schema_errors(value, target, root)
    errors: list[str] = []
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [schema_errors(value, option, root) for option in schema[key]]
            if all(options):
                errors.append(f"{value!r} matches none of {key}: {options[0]}")
    for option in schema.get("allOf", []):
        errors.extend(schema_errors(value, option, root))
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{value!r} not in {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{value!r} != {schema['const']!r}")
    expected = schema.get("type")
    if expected is not None:
        types = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, t) for t in types):
            return [*errors, f"{value!r} is not of type {expected}"]
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"string longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"string shorter than {schema['minLength']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{value} < {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{value} > {schema['maximum']}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"missing required property {name!r}")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                errors.extend(f"{name}: {e}" for e in schema_errors(item, properties[name], root))
            elif extra is False:
                errors.append(f"unexpected property {name!r}")
            elif isinstance(extra, dict):
                errors.extend(f"{name}: {e}" for e in schema_errors(item, extra, root))
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errors.extend(f"[{i}]: {e}" for e in schema_errors(item, schema["items"], root))
    return errors


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return {
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "null": value is None,
    }.get(name, False)


# --- traffic statistics for /metrics --------------------------------------------------------


class _Histogram:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.total = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.total += 1
        self.sum += value
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1

    def render(self, name: str, labels: str) -> list[str]:
        lines = [f"# TYPE {name} histogram"]
        for bound, count in zip(self.buckets, self.counts, strict=True):
            lines.append(f'{name}_bucket{{{labels},le="{bound}"}} {float(count)}')
        lines.append(f'{name}_bucket{{{labels},le="+Inf"}} {float(self.total)}')
        lines.append(f"{name}_count{{{labels}}} {float(self.total)}")
        lines.append(f"{name}_sum{{{labels}}} {self.sum}")
        return lines


def render_prompt(messages: list[dict[str, Any]]) -> str:
    """The prompt as a chat template would lay it out, for prefix-cache accounting."""
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(f"<|{message.get('role', '')}|>\n{content or ''}\n")
    return "".join(parts)


def approx_tokens(text: str) -> int:
    return max(1, -(-len(text) // CHARS_PER_TOKEN)) if text else 0


class _Stats:
    def __init__(self, kv_cache_tokens: int) -> None:
        self.lock = threading.Lock()
        self.kv_cache_tokens = kv_cache_tokens
        self.running = 0
        self.peak_running = 0
        self.waiting = 0
        self.tokens_in_use = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success = 0
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.seen_blocks: dict[str, set[str]] = {}
        self.ttft = _Histogram(TTFT_BUCKETS)
        self.e2e = _Histogram(E2E_BUCKETS)

    def prefix_lookup(self, prompt: str, salt: str | None) -> int:
        """Tokens of `prompt` served from the prefix cache; records the prompt's blocks."""
        space = salt if salt is not None else "\x00none"
        chain = hashlib.sha256(space.encode()).hexdigest()
        full_blocks = len(prompt) // BLOCK_CHARS
        with self.lock:
            seen = self.seen_blocks.setdefault(space, set())
            hits = 0
            missed = False
            for i in range(full_blocks):
                block = prompt[i * BLOCK_CHARS : (i + 1) * BLOCK_CHARS]
                chain = hashlib.sha256((chain + block).encode()).hexdigest()
                if not missed and chain in seen:
                    hits += 1
                else:
                    missed = True
                    seen.add(chain)
            tokens = approx_tokens(prompt)
            self.prefix_queries += tokens
            self.prefix_hits += hits * BLOCK_TOKENS
            return hits * BLOCK_TOKENS


# --- the server -----------------------------------------------------------------------------

Responder = Callable[[RecordedRequest], Step]


class OpenAIEmulator:
    def __init__(
        self,
        models: tuple[str, ...] = ("assistant",),
        *,
        api_key: str | None = None,
        reject_json_schema: bool = False,
        max_model_len: int | None = None,
        max_num_seqs: int = 64,
        kv_cache_tokens: int = 200_000,
        port: int = 0,
    ) -> None:
        self.models = models
        self.api_key = api_key
        # llama.cpp's server answers HTTP 500 to response_format json_schema.
        self.reject_json_schema = reject_json_schema
        # vLLM's --max-model-len: prompt + max_tokens over it → HTTP 400.
        self.max_model_len = max_model_len
        self.responder: Responder | None = None
        self.requests: list[RecordedRequest] = []
        self.script_errors: list[str] = []
        self._steps: list[Step] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_num_seqs)
        self._port = port
        self._server: EmulatorServer | None = None
        self._thread: threading.Thread | None = None
        self.stats = _Stats(kv_cache_tokens)

    # lifecycle
    def start(self) -> OpenAIEmulator:
        """Start serving (again, on the same port after `stop()`)."""
        handler = type("Handler", (_Handler,), {"emulator": self})
        self._server = EmulatorServer(("127.0.0.1", self._port), handler)
        self._port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="openai-emulator", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening: clients now get connection refused."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> OpenAIEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/metrics"

    # scripting
    def script(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    def clear_script(self) -> None:
        with self._lock:
            self._steps.clear()

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _next_step(self, request: RecordedRequest) -> Step:
        with self._lock:
            if self._steps:
                return self._steps.pop(0)
        if self.responder is not None:
            return self.responder(request)
        return Step()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def prefix_cache_hit_rate(self) -> float:
        s = self.stats
        return s.prefix_hits / s.prefix_queries if s.prefix_queries else 0.0

    def metrics_text(self) -> str:
        s = self.stats
        labels = f'model_name="{self.models[0]}"'
        with s.lock:
            usage = min(1.0, s.tokens_in_use / s.kv_cache_tokens) if s.kv_cache_tokens else 0.0
            lines = [
                "# HELP vllm:num_requests_running Number of requests in model execution batches.",
                "# TYPE vllm:num_requests_running gauge",
                f"vllm:num_requests_running{{{labels}}} {float(s.running)}",
                "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
                "# TYPE vllm:num_requests_waiting gauge",
                f"vllm:num_requests_waiting{{{labels}}} {float(s.waiting)}",
                "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
                "# TYPE vllm:kv_cache_usage_perc gauge",
                f"vllm:kv_cache_usage_perc{{{labels}}} {usage}",
                "# TYPE vllm:prefix_cache_queries_total counter",
                f"vllm:prefix_cache_queries_total{{{labels}}} {float(s.prefix_queries)}",
                "# TYPE vllm:prefix_cache_hits_total counter",
                f"vllm:prefix_cache_hits_total{{{labels}}} {float(s.prefix_hits)}",
                "# TYPE vllm:prompt_tokens_total counter",
                f"vllm:prompt_tokens_total{{{labels}}} {float(s.prompt_tokens)}",
                "# TYPE vllm:generation_tokens_total counter",
                f"vllm:generation_tokens_total{{{labels}}} {float(s.generation_tokens)}",
                "# TYPE vllm:request_success_total counter",
                f'vllm:request_success_total{{finished_reason="stop",{labels}}} {float(s.success)}',
                *s.ttft.render("vllm:time_to_first_token_seconds", labels),
                *s.e2e.render("vllm:e2e_request_latency_seconds", labels),
            ]
        return "\n".join(lines) + "\n"


def context_message(max_len: int, prompt_tokens: int, max_tokens: int) -> str:
    """vLLM's (and llama-cpp-python's) 400 message for a prompt over the context."""
    return (
        f"This model's maximum context length is {max_len} tokens. However, you requested "
        f"{prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, {max_tokens} in "
        "the completion). Please reduce the length of the messages or completion."
    )


def echo_content(request: RecordedRequest) -> str:
    """The default answer: a valid Decision echoing the last line the customer wrote."""
    last = ""
    for message in reversed(request.messages):
        if message.get("role") == "user":
            last = str(message.get("content") or "")
            break
    lines = [line.strip() for line in last.strip().splitlines() if line.strip()]
    # The prompt writes "[2025-03-01 10:01] Customer: text"; a reply repeats only the text (a
    # timestamp in a reply is a date the guardrail rightly holds back).
    said = re.sub(r"^\[[^\]]*\]\s*\w+:\s*", "", lines[-1]) if lines else ""
    return decision_json(reply=("Echo: " + said)[:200])


TOKEN_RE = re.compile(r"\S+\s*|\s+")


def split_tokens(text: str) -> list[str]:
    """Stream pieces ("tokens"): words with their trailing space, cut into 4-character pieces."""
    pieces: list[str] = []
    for word in TOKEN_RE.findall(text):
        step = CHARS_PER_TOKEN
        pieces.extend(word[i : i + step] for i in range(0, len(word), step))
    return pieces or [""]


class _Handler(BaseHTTPRequestHandler):
    emulator: OpenAIEmulator
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    # plumbing
    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(
        self,
        status: int,
        message: str,
        kind: str = "BadRequestError",
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        payload = body or {"error": {"message": message, "type": kind, "param": None,
                                     "code": status}}  # fmt: skip
        raw = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def _authorized(self) -> bool:
        key = self.emulator.api_key
        if key is None:
            return True
        if self.headers.get("Authorization", "") == f"Bearer {key}":
            return True
        self._error(401, "Unauthorized", "AuthenticationError")
        return False

    # routes
    def do_GET(self) -> None:
        emu = self.emulator
        emu._record(RecordedRequest("GET", self.path, dict(self.headers), {}, time.time()))
        if self.path.rstrip("/") == "/metrics":
            body = emu.metrics_text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path.rstrip("/") in ("/v1/models", "/models"):
            if not self._authorized():
                return
            now = int(time.time())
            data = [
                {"id": m, "object": "model", "created": now, "owned_by": "emulator", "root": m}
                for m in emu.models
            ]
            self._send_json(200, {"object": "list", "data": data})
        elif self.path.rstrip("/") in ("/health", "/healthz"):
            self._send_json(200, {"status": "ok"})
        else:
            self._error(404, f"no route {self.path}", "NotFoundError")

    def do_POST(self) -> None:
        emu = self.emulator
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        request = RecordedRequest("POST", self.path, dict(self.headers), body, time.time())
        emu._record(request)
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route {self.path}", "NotFoundError")
            return
        if not self._authorized():
            return
        if not isinstance(body.get("messages"), list) or not body.get("messages"):
            self._error(400, "messages must be a non-empty list")
            return
        if body.get("model") not in emu.models:
            self._error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
            return
        response_format = request.response_format or {}
        if emu.reject_json_schema and response_format.get("type") == "json_schema":
            # What llama_cpp.server does: an unhandled exception, HTTP 500.
            self._error(500, "json_schema response_format is not supported", "InternalServerError")
            return

        if emu.max_model_len is not None:
            prompt_tokens = approx_tokens(render_prompt(request.messages))
            wanted = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
            if prompt_tokens + wanted > emu.max_model_len:
                message = context_message(emu.max_model_len, prompt_tokens, wanted)
                self._error(400, message, "BadRequestError")
                return

        step = emu._next_step(request)
        if step.drop_connection:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(2)
            return
        if step.status != 200:
            if step.delay:
                time.sleep(step.delay)
            self._error(step.status, step.error_message or "error", step.error_type,
                        step.error_body, step.headers)  # fmt: skip
            return
        content = step.content if step.content is not None else echo_content(request)
        problem = self._structured_output_problem(content, response_format, step)
        if problem:
            emu.script_errors.append(problem)
            self._error(500, f"script error: {problem}", "InternalServerError")
            return
        self._generate(request, step, content)

    def _structured_output_problem(
        self, content: str, response_format: dict[str, Any], step: Step
    ) -> str:
        if step.skip_schema_check or response_format.get("type") not in (
            "json_schema",
            "json_object",
        ):
            return ""
        try:
            value = json.loads(content)
        except ValueError as exc:
            return f"scripted answer is not JSON under {response_format['type']}: {exc}"
        if response_format["type"] == "json_object":
            schema = response_format.get("schema")
            if not isinstance(value, dict):
                return "scripted answer is not a JSON object under json_object"
        else:
            schema = (response_format.get("json_schema") or {}).get("schema")
        if isinstance(schema, dict):
            errors = schema_errors(value, schema)
            if errors:
                return "scripted answer violates the request's schema: " + "; ".join(errors[:5])
        return ""

    def _generate(self, request: RecordedRequest, step: Step, content: str) -> None:
        emu = self.emulator
        stats = emu.stats
        started = time.monotonic()
        prompt = render_prompt(request.messages)
        prompt_tokens = approx_tokens(prompt)
        with stats.lock:
            stats.waiting += 1
        emu._slots.acquire()
        with stats.lock:
            stats.waiting -= 1
            stats.running += 1
            stats.peak_running = max(stats.peak_running, stats.running)
            stats.tokens_in_use += prompt_tokens
        pieces = split_tokens(content)
        try:
            stats.prefix_lookup(prompt, request.cache_salt)
            if step.delay:
                time.sleep(step.delay)
            if request.stream:
                self._stream(request, step, pieces, prompt_tokens, started)
            else:
                if step.token_delay:
                    time.sleep(step.token_delay * len(pieces))
                with stats.lock:
                    stats.ttft.observe(time.monotonic() - started)
                self._send_json(
                    200, self._completion(request, step, content, prompt_tokens, len(pieces))
                )
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (timeout): nothing more to send
        finally:
            with stats.lock:
                stats.running -= 1
                stats.tokens_in_use -= prompt_tokens
                stats.prompt_tokens += prompt_tokens
                stats.generation_tokens += len(pieces)
                stats.success += 1
                stats.e2e.observe(time.monotonic() - started)
            emu._slots.release()

    def _completion(
        self, request: RecordedRequest, step: Step, content: str, prompt_tokens: int, out: int
    ) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": step.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": out,
                "total_tokens": prompt_tokens + out,
            },
        }

    def _stream(
        self,
        request: RecordedRequest,
        step: Step,
        pieces: list[str],
        prompt_tokens: int,
        started: float,
    ) -> None:
        stats = self.emulator.stats
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())

        def event(
            choices: list[dict[str, Any]],
            usage: dict[str, int] | None = None,
            error: dict[str, Any] | None = None,
        ) -> None:
            payload: dict[str, Any] = {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": request.model,
                "choices": choices,
            }
            if usage is not None:
                payload["usage"] = usage
            if error is not None:
                payload = {"error": error}
            self.wfile.write(b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n")
            self.wfile.flush()

        event([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        for i, piece in enumerate(pieces):
            if i == step.fail_after_tokens:
                error = {"message": "engine core died", "type": "InternalServerError", "code": 500}
                event([], None, error)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                return
            if i and step.token_delay:
                time.sleep(step.token_delay)
            event([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
            if i == 0:
                with stats.lock:
                    stats.ttft.observe(time.monotonic() - started)
        event([{"index": 0, "delta": {}, "finish_reason": step.finish_reason}])
        options = request.body.get("stream_options") or {}
        if options.get("include_usage"):
            usage = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(pieces),
                "total_tokens": prompt_tokens + len(pieces),
            }
            event([], usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def refused_base_url() -> str:
    """A base URL on a free local port nobody listens on: connection refused."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@contextlib.contextmanager
def openai_emulator(**kwargs: Any) -> Iterator[OpenAIEmulator]:
    emulator = OpenAIEmulator(**kwargs)
    with emulator:
        yield emulator


def main() -> None:
    parser = argparse.ArgumentParser(description="OpenAI-compatible emulator (echo decisions)")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--model", action="append", dest="models")
    parser.add_argument("--max-num-seqs", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before the first token")
    parser.add_argument("--token-delay", type=float, default=0.0, help="seconds between tokens")
    args = parser.parse_args()
    emu = OpenAIEmulator(
        tuple(args.models or ["assistant"]), max_num_seqs=args.max_num_seqs, port=args.port
    )
    if args.delay or args.token_delay:
        emu.responder = lambda request: Step(delay=args.delay, token_delay=args.token_delay)
    emu.start()
    print(f"LLM_BASE_URL={emu.base_url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        emu.stop()


if __name__ == "__main__":
    main()
