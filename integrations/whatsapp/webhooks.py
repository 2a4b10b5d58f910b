"""The webhook endpoints: the one hot path of the product, kept lean on purpose.

These are plain ASGI callables mounted in `inbox/site/asgi.py` in front of Django: no middleware
stack, no thread hops, no Celery call before the 200. Per request: read the body (bounded),
verify the signature or token, parse, normalise, and hand the events to `ingest.aenqueue`
(dedup + durable queue in one Redis round trip). The only database read — which channel a
number belongs to — is cached for a few seconds.

Answers: 200 once every event is queued (or was a duplicate); 4xx with a plain-text reason for
input that retrying cannot fix; 503 when the queue is unreachable, so the provider retries.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from functools import partial
from typing import Any
from urllib.parse import parse_qs

import redis.exceptions
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, connection

from inbox.conversations import ingest
from inbox.conversations.events import InboundEvent
from inbox.conversations.models import Channel
from inbox.platform import logs, metrics
from inbox.platform.logs import correlation_id
from inbox.upkeep import alerts
from integrations.whatsapp import bridge, cloud_events, template_sync, user_preferences
from integrations.whatsapp.gateways import evolution as gateway_evolution
from integrations.whatsapp.gateways import evolution_events, waha, waha_events

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class BodyTooLarge(Exception):
    pass


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The request body, or `BodyTooLarge` once it passes `limit` bytes: at once when the
    declared Content-Length is over it (nothing is read), else as soon as the chunks read are."""
    declared = _header(scope, b"content-length") or ""
    if declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


async def respond(send: Send, status: int, text: str = "") -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"x-correlation-id", correlation_id.get().encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _bearer_token(header: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header ("" for any other form: a bare
    token, `Token …`, Basic). The scheme's name is case-insensitive (RFC 9110)."""
    scheme, _, token = (header or "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


# Compared with the given token when the channel id is unknown, so that an unknown id and a
# wrong token take the same path and get the same answer (no enumerating channel ids).
_NO_CHANNEL_TOKEN = "no-such-bridge-channel"


class RouteCache:
    """Which channel a Cloud API number or a bridge channel id is, cached for a few seconds
    (also when unknown), so the webhook does not query the database per request.

    A burst is what arrives after a quiet spell, so the moment an entry expires is the moment
    it is needed most: every request of the burst missed it at once and each opened its own
    database connection for the same row (20 webhooks, 20 connections, the burst stored
    ~200 ms late on two cores). So one look-up per key is in flight at a time, the others
    await it; and a Cloud API number already known is served from its expired entry for up
    to `stale` seconds more while one refresh runs in the background. Not an unknown number
    (a channel just created must start working within the TTL) and not a bridge token (a
    rotated token must stop working within it); a number of a channel just deactivated is
    still queued meanwhile, and the consumer drops its events (`ingest.channels.channel_info`)."""

    def __init__(self, ttl: float | None = None, stale: float | None = None) -> None:
        self.ttl = settings.WHATSAPP_ROUTE_CACHE_SECONDS if ttl is None else ttl
        self.stale = settings.WHATSAPP_ROUTE_STALE_SECONDS if stale is None else stale
        self._numbers: dict[str, tuple[float, int | None]] = {}
        self._bridges: dict[tuple[str, int], tuple[float, str | None]] = {}
        self._lookups: dict[tuple[object, ...], asyncio.Task[None]] = {}

    def clear(self) -> None:
        self._numbers.clear()
        self._bridges.clear()

    async def cloud_channels(self, numbers: set[str]) -> dict[str, int]:
        now = time.monotonic()
        missing: set[str] = set()
        expired: set[str] = set()
        for number in numbers:
            expires, channel_id = self._numbers.get(number, (0.0, None))
            if expires >= now:
                continue
            if channel_id is not None and now - expires < self.stale:
                expired.add(number)
            else:
                missing.add(number)
        if expired:
            self._shared(("numbers", frozenset(expired)), partial(self._load_numbers, expired))
        if missing:
            task = self._shared(
                ("numbers", frozenset(missing)), partial(self._load_numbers, missing)
            )
            await asyncio.shield(task)  # a request given up on does not cancel the others' look-up
        return {
            n: channel_id
            for n in numbers
            if (channel_id := self._numbers.get(n, (0.0, None))[1]) is not None
        }

    async def bridge_token(self, channel_id: int, kind: str = Channel.Kind.BRIDGE) -> str | None:
        """The token of the active channel of this id and kind (a bridge or a gateway)."""
        cached = self._bridges.get((kind, channel_id))
        if cached is None or cached[0] < time.monotonic():
            load = partial(self._load_bridge, channel_id, kind)
            await asyncio.shield(self._shared(("bridge", kind, channel_id), load))
            cached = self._bridges[(kind, channel_id)]
        return cached[1]

    async def _load_numbers(self, numbers: set[str]) -> None:
        metrics.ROUTE_LOOKUPS.inc()
        found = await sync_to_async(_lookup_numbers, thread_sensitive=False)(numbers)
        expires = time.monotonic() + self.ttl
        for number in numbers:
            self._numbers[number] = (expires, found.get(number))

    async def _load_bridge(self, channel_id: int, kind: str) -> None:
        metrics.ROUTE_LOOKUPS.inc()
        lookup = sync_to_async(_lookup_bridge_token, thread_sensitive=False)
        token = await lookup(channel_id, kind)
        self._bridges[(kind, channel_id)] = (time.monotonic() + self.ttl, token)

    def _shared(
        self, key: tuple[object, ...], load: Callable[[], Coroutine[Any, Any, None]]
    ) -> asyncio.Task[None]:
        """The look-up in flight for `key` in this event loop, or a new one."""
        loop = asyncio.get_running_loop()
        task = self._lookups.get(key)
        if task is not None and not task.done() and task.get_loop() is loop:
            return task
        task = loop.create_task(load())
        self._lookups[key] = task

        def finished(done: asyncio.Task[None]) -> None:
            if self._lookups.get(key) is done:
                del self._lookups[key]
            if not done.cancelled() and done.exception() is not None:
                # Awaited requests get the error themselves; a background refresh only here,
                # and the next request tries again.
                log.warning("webhook.route_lookup_failed", exc_info=done.exception())

        task.add_done_callback(finished)
        return task


# These run in a pool thread once per cache miss; the connection is closed right after, so no
# idle connection per pool thread is left behind.


def _lookup_numbers(numbers: set[str]) -> dict[str, int]:

    try:
        rows = Channel.objects.filter(
            kind=Channel.Kind.CLOUD_API, is_active=True, phone_number_id__in=numbers
        ).values_list("phone_number_id", "pk")
        return dict(rows)
    finally:
        connection.close()


def _lookup_bridge_token(channel_id: int, kind: str) -> str | None:

    try:
        channel = Channel.objects.filter(pk=channel_id, kind=kind, is_active=True).first()
        return channel.bridge_token if channel is not None and channel.bridge_token else None
    finally:
        connection.close()


routes = RouteCache()


async def _queue(send: Send, transport: str, events: list[Any]) -> None:
    cid = correlation_id.get()
    events = [dataclasses.replace(event, correlation_id=cid) for event in events]
    try:
        result = await ingest.aenqueue(events)
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
        log.error("webhook.queue_unavailable", extra={"transport": transport})
        metrics.WEBHOOKS_RECEIVED.labels(transport=transport, outcome="queue_unavailable").inc()
        await respond(send, 503, "queue unavailable, retry later")
        return
    metrics.WEBHOOKS_RECEIVED.labels(transport=transport, outcome="accepted").inc()
    metrics.EVENTS_ENQUEUED.labels(transport=transport).inc(result.accepted)
    metrics.DUPLICATES_DROPPED.labels(transport=transport).inc(result.duplicates)
    await respond(send, 200, "ok")


def _reject(transport: str, outcome: str) -> None:
    metrics.WEBHOOKS_RECEIVED.labels(transport=transport, outcome=outcome).inc()


async def cloud_api(scope: Scope, receive: Receive, send: Send) -> None:
    """`/webhooks/whatsapp/`: GET verification handshake, POST events."""
    correlation_id.set(logs.new_correlation_id())
    method = scope["method"]
    if method == "GET":
        try:
            query = parse_qs(
                scope.get("query_string", b"").decode("latin-1"),
                max_num_fields=settings.FORM_MAX_FIELDS,
            )
        except ValueError:  # more fields than that
            await respond(send, 400, "too many query fields")
            return
        mode = query.get("hub.mode", [""])[0]
        token = query.get("hub.verify_token", [""])[0]
        expected = settings.WHATSAPP_VERIFY_TOKEN
        if mode == "subscribe" and expected and hmac.compare_digest(token, expected):
            await respond(send, 200, query.get("hub.challenge", [""])[0])
        else:
            await respond(send, 403, "verification failed")
        return
    if method != "POST":
        await respond(send, 405, "method not allowed")
        return
    try:
        body = await read_body(scope, receive, settings.WEBHOOK_MAX_BODY_BYTES)
    except BodyTooLarge:
        _reject("cloud_api", "too_large")
        await respond(send, 413, "body too large")
        return
    secret = settings.WHATSAPP_APP_SECRET
    if not secret:
        log.error("webhook.app_secret_missing")
        _reject("cloud_api", "not_configured")
        await respond(send, 503, "WHATSAPP_APP_SECRET is not configured")
        return
    if not cloud_events.signature_is_valid(secret, body, _header(scope, b"x-hub-signature-256")):
        _reject("cloud_api", "bad_signature")
        await respond(send, 403, "invalid signature")
        return
    try:
        payload = json.loads(body)
        channels = await routes.cloud_channels(cloud_events.phone_number_ids(payload))
        normalised = cloud_events.normalise(payload, channels)
    except (ValueError, RecursionError) as exc:  # invalid JSON / UTF-8, or MalformedWebhook
        reason = str(exc) if isinstance(exc, cloud_events.MalformedWebhook) else "invalid JSON"
        _reject("cloud_api", "malformed")
        await respond(send, 400, f"malformed webhook: {reason}")
        return
    template_changes = template_sync.status_changes(payload)
    if template_changes:  # a template approved, paused, disabled…: the store follows
        apply = _in_thread(template_sync.apply_status_changes_quietly)
        await sync_to_async(apply, thread_sensitive=False)(template_changes)
    preferences = user_preferences.changes(payload, channels)
    if preferences:  # a customer stopped or resumed marketing messages in WhatsApp
        apply_preferences = _in_thread(user_preferences.apply_quietly)
        await sync_to_async(apply_preferences, thread_sensitive=False)(preferences)
    if normalised.skipped:
        log.info(
            "webhook.skipped", extra={"transport": "cloud_api", "what": normalised.skipped[:10]}
        )
    if normalised.unknown_numbers:
        log.warning(
            "webhook.unknown_number",
            extra={"phone_number_ids": sorted(normalised.unknown_numbers)[:10]},
        )
        if not channels:
            _reject("cloud_api", "unknown_channel")
            await respond(send, 404, "no active channel has this phone_number_id")
            return
    await _queue(send, "cloud_api", normalised.events)


async def _posted_body(scope: Scope, receive: Receive, send: Send, transport: str) -> bytes | None:
    """A POST's body within the webhook limit, or None once the sender has its 405 or 413."""
    correlation_id.set(logs.new_correlation_id())
    if scope["method"] != "POST":
        await respond(send, 405, "method not allowed")
        return None
    try:
        return await read_body(scope, receive, settings.WEBHOOK_MAX_BODY_BYTES)
    except BodyTooLarge:
        _reject(transport, "too_large")
        await respond(send, 413, "body too large")
        return None


async def bridge_events(scope: Scope, receive: Receive, send: Send, channel_id: int) -> None:
    """`/webhooks/bridge/<channel id>/`: events from a linked-device bridge."""
    body = await _posted_body(scope, receive, send, "bridge")
    if body is None:
        return
    token = await routes.bridge_token(channel_id)
    given = _bearer_token(_header(scope, b"authorization"))
    matches = hmac.compare_digest(given.encode(), (token or _NO_CHANNEL_TOKEN).encode())
    if token is None or not given or not matches:
        # One answer for an unknown channel id and a wrong token (the metric tells them apart).
        _reject("bridge", "unknown_channel" if token is None else "bad_token")
        await respond(send, 403, "invalid channel or token")
        return
    try:
        events, skipped = bridge.normalise(json.loads(body), channel_id)
    except (ValueError, RecursionError) as exc:
        reason = str(exc) if isinstance(exc, cloud_events.MalformedWebhook) else "invalid JSON"
        _reject("bridge", "malformed")
        await respond(send, 400, f"malformed event: {reason}")
        return
    if skipped:
        log.info("webhook.skipped", extra={"transport": "bridge", "what": skipped[:10]})
    await _queue(send, "bridge", list(events))


async def evolution(scope: Scope, receive: Receive, send: Send, channel_id: int) -> None:
    """`/webhooks/evolution/<channel id>/`: Evolution API v2. Its webhook has no signature or
    header of ours: the body's `apikey` field (the instance's token, sent only with
    `AUTHENTICATION_EXPOSE_IN_FETCH_INSTANCES=true`) must be the channel's token."""
    body = await _posted_body(scope, receive, send, "evolution")
    if body is None:
        return
    token = await routes.bridge_token(channel_id, Channel.Kind.EVOLUTION)
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        payload = None  # unauthenticated as well: the same answer as a wrong key
    given = evolution_events.given_apikey(payload)
    matches = hmac.compare_digest(given.encode(), (token or _NO_CHANNEL_TOKEN).encode())
    if token is None or not given or not matches:
        _reject("evolution", "unknown_channel" if token is None else "bad_token")
        await respond(send, 403, "invalid channel or apikey")
        return
    state = evolution_events.link_state(payload)
    if state is not None:
        changed = alerts.gateway_link_restored if state == "open" else alerts.gateway_link_lost
        args = (channel_id,) if state == "open" else (channel_id, f"instance state {state}")
        await sync_to_async(_in_thread(changed), thread_sensitive=False)(*args)
        metrics.WEBHOOKS_RECEIVED.labels(transport="evolution", outcome="accepted").inc()
        await respond(send, 200, "ok")
        return
    try:
        events, skipped = evolution_events.normalise(payload, channel_id)
    except cloud_events.MalformedWebhook as exc:
        _reject("evolution", "malformed")
        await respond(send, 400, f"malformed event: {exc}")
        return
    if skipped:
        log.info("webhook.skipped", extra={"transport": "evolution", "what": skipped[:10]})
    inline = evolution_events.inline_media(payload)
    if inline:  # before the events are queued: the worker that downloads them finds them
        keep = sync_to_async(gateway_evolution.keep_inline_media, thread_sensitive=False)
        try:
            await keep(channel_id, inline)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
            log.warning("webhook.inline_media_not_kept", extra={"transport": "evolution"})
    await _queue(send, "evolution", events)


def _in_thread(work: Callable[..., None]) -> Callable[..., None]:
    """`work` in a pool thread, its database connection closed after (as the look-ups)."""

    def run(*args: Any) -> None:
        try:
            work(*args)
        finally:
            connection.close()

    return run


async def waha_webhook(scope: Scope, receive: Receive, send: Send, channel_id: int) -> None:
    """`/webhooks/waha/<channel id>/`: one WAHA event, signed with `X-Webhook-Hmac`
    (HMAC-SHA512 of the body, keyed with the channel's token). The signature is checked before
    anything else; an unknown channel and a wrong signature get the same 403."""
    body = await _posted_body(scope, receive, send, "waha")
    if body is None:
        return
    key = await routes.bridge_token(channel_id, Channel.Kind.WAHA)
    signature, algorithm = (
        _header(scope, b"x-webhook-hmac"),
        _header(scope, b"x-webhook-hmac-algorithm"),
    )
    valid = waha_events.signature_is_valid(key or _NO_CHANNEL_TOKEN, body, signature, algorithm)
    if key is None or not valid:
        _reject("waha", "unknown_channel" if key is None else "bad_signature")
        await respond(send, 403, "invalid channel or signature")
        return
    try:
        read = waha_events.normalise(json.loads(body), channel_id)
    except (ValueError, RecursionError) as exc:
        reason = str(exc) if isinstance(exc, cloud_events.MalformedWebhook) else "invalid JSON"
        _reject("waha", "malformed")
        await respond(send, 400, f"malformed event: {reason}")
        return
    if read.skipped:
        log.info("webhook.skipped", extra={"transport": "waha", "what": read.skipped[:10]})
    if read.session_status:
        try:
            await sync_to_async(_session_changed, thread_sensitive=False)(
                channel_id, read.session_status
            )
        except (DatabaseError, redis.exceptions.RedisError):
            log.error("webhook.session_status_unsaved", extra={"channel_id": channel_id})
            _reject("waha", "unavailable")
            await respond(send, 503, "session state not saved, retry later")
            return
    for chat_key in {e.chat_key for e in read.events if isinstance(e, InboundEvent) and e.from_me}:
        # Maybe the echo of a send whose answer (and id) is still on its way: wait for it.
        await sync_to_async(waha.wait_for_sends, thread_sensitive=False)(channel_id, chat_key)
    await _queue(send, "waha", list(read.events))


def _session_changed(channel_id: int, state: str) -> None:
    try:
        waha.session_changed(channel_id, state)
    finally:
        connection.close()


_BRIDGE_PATH = re.compile(r"^/webhooks/bridge/(\d{1,18})/?$")
_EVOLUTION_PATH = re.compile(r"^/webhooks/evolution/(\d{1,18})/?$")
_WAHA_PATH = re.compile(r"^/webhooks/waha/(\d{1,18})/?$")


def route(path: str) -> Callable[[Scope, Receive, Send], Coroutine[Any, Any, None]] | None:
    """The handler for a webhook path, or None: one routing table for every server that mounts
    the webhooks (`inbox/site/asgi.py` in front of Django, `inbox/site/webhook_app.py` alone)."""
    if path in ("/webhooks/whatsapp/", "/webhooks/whatsapp"):
        return cloud_api
    bridge_path = _BRIDGE_PATH.match(path)
    if bridge_path:
        return partial(bridge_events, channel_id=int(bridge_path.group(1)))
    evolution_path = _EVOLUTION_PATH.match(path)
    if evolution_path:
        return partial(evolution, channel_id=int(evolution_path.group(1)))
    waha_path = _WAHA_PATH.match(path)
    if waha_path:
        return partial(waha_webhook, channel_id=int(waha_path.group(1)))
    return None
