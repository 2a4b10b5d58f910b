"""Prometheus metrics of the LLM client (names prefixed `inbox_llm_`).

Labels: `endpoint` is "primary" or "secondary" (the installation's chain), "business" (a
business's own endpoint, `assistant.llm.business`) or "replay…" (`assistant.replay`);
`replica` is host:port/path of one base URL. They live in the default prometheus_client
registry of the process that makes the calls (the Celery workers); expose them with
prometheus_client's multiprocess mode or a worker exporter.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 13.0, 20.0, 30.0, 60.0)
TTFT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)

REQUEST_SECONDS = Histogram(
    "inbox_llm_request_seconds",
    "Wall time of one chat-completions request, by outcome.",
    ["endpoint", "replica", "outcome"],
    buckets=LATENCY_BUCKETS,
)
TTFT_SECONDS = Histogram(
    "inbox_llm_ttft_seconds",
    "Time to the first streamed content token.",
    ["endpoint", "replica"],
    buckets=TTFT_BUCKETS,
)
TOKENS = Counter(
    "inbox_llm_tokens_total",
    "Prompt (in) and completion (out) tokens, as the server reported them.",
    ["endpoint", "direction"],
)
FALLBACKS = Counter(
    "inbox_llm_fallbacks_total",
    "Turns that left an endpoint for the next one in the chain (to: secondary or handoff).",
    ["from_endpoint", "to"],
)
RETRIES = Counter("inbox_llm_retries_total", "Retried requests.", ["endpoint", "replica"])
INVALID_OUTPUT = Counter(
    "inbox_llm_invalid_output_total",
    "Answers that failed validation (stage: first or repair).",
    ["endpoint", "stage"],
)
ADMISSION_REJECTED = Counter(
    "inbox_llm_admission_rejected_total",
    "Requests refused because every replica was at its in-flight limit for too long.",
    ["endpoint"],
)
BREAKER_STATE = Gauge(
    "inbox_llm_breaker_state",
    "Circuit breaker state last seen by this process: 0 closed, 1 half-open, 2 open.",
    ["replica"],
)
IN_FLIGHT = Gauge(
    "inbox_llm_in_flight",
    "Requests in flight on a replica across all workers, as last read from Redis.",
    ["replica"],
)
MISCONFIGURED = Counter(
    "inbox_llm_misconfigured_total",
    "Requests the server refused as misconfigured (401/403/404/422/400): the breaker tripped.",
    ["replica"],
)
CONTEXT_FALLBACKS = Counter(
    "inbox_llm_context_fallbacks_total",
    "Prompts over the model's context, retried with the compact (retrieval-only) prompt.",
    ["endpoint"],
)
