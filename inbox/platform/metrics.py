"""Prometheus metrics of the conversation core (webhooks, ingest, replies, turns, handoffs).

Defined here, counted where things happen, exposed by the site's `/metrics` view
(`inbox/site/metrics_view.py`)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

WEBHOOKS_RECEIVED = Counter(
    "inbox_webhooks_received_total", "Webhook requests received", ["transport", "outcome"]
)
EVENTS_ENQUEUED = Counter(
    "inbox_events_enqueued_total", "Events put on the ingest queue", ["transport"]
)
DUPLICATES_DROPPED = Counter(
    "inbox_duplicates_dropped_total", "Events dropped as duplicates before the queue", ["transport"]
)
ROUTE_LOOKUPS = Counter(
    "inbox_webhook_route_lookups_total",
    "Database look-ups of which channel a webhook is for (the rest come from the route cache)",
)
INGEST_SECONDS = Histogram(
    "inbox_ingest_seconds",
    "Time to accept one event in the consumer",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
REPLIES_SENT = Counter("inbox_replies_sent_total", "Outbound messages sent", ["author"])
REPLIES_DROPPED = Counter(
    "inbox_replies_dropped_total",
    "Bot replies not sent, by reason (stale, not_bot_owner, undeliverable)",
    ["reason"],
)
REPLIES_FAILED = Counter(
    "inbox_replies_failed_total",
    "Outbound messages that failed: at the send, or later by a failed delivery status",
    ["author", "code"],
)
TURNS = Counter("inbox_turns_total", "Assistant turns, by outcome", ["outcome"])
HANDOFFS = Counter("inbox_handoffs_total", "Chats handed to a human, by reason", ["reason"])
WEBSOCKETS = Gauge(
    "inbox_websocket_connections", "Open dashboard websockets", multiprocess_mode="livesum"
)
# "mostrecent": the value the last check wrote wins; "max" would keep a resolved alert's count
# alive in the file of whichever process set it last.
ALERTS_ACTIVE = Gauge(
    "inbox_alerts_active",
    "Alerts currently raised, by kind",
    ["kind"],
    multiprocess_mode="mostrecent",
)
DASHBOARD_PUSHES = Counter(
    "inbox_dashboard_pushes_total",
    "Dashboard pushes after a commit: rendered and published, or skipped (no dashboard open)",
    ["outcome"],
)
