"""A Bitrix24 portal over real HTTP, for tests (wire formats: shared/PROTOCOLS.md Part B).

    with Bitrix24Emulator(rate=5, burst=10) as portal:
        portal.webhook_url          # http://127.0.0.1:PORT/rest/1/<code>/
        portal.add_outgoing_webhook("http://app/webhooks/bitrix24/", ["ONCRMDEALUPDATE"])

What it emulates, as the real portal does it:
- incoming-webhook URLs `/rest/{user}/{code}/{method}[.json]` and app calls `/rest/{method}` with
  `auth=<access token>`; JSON, form and query parameters in PHP bracket form; the OAuth
  refresh endpoint `/oauth/token/` (access tokens expire, refresh tokens are single-use);
- the success envelope with a `time` block (errors carry none), list `total`/`next`, 50 rows a
  page, `start=-1` fast mode, `>ID` filters with operator prefixes, aware datetimes in the
  server's time zone;
- the request leaky bucket (503 QUERY_LIMIT_EXCEEDED above `burst`, draining `rate`/s), the
  per-method operating-time budget (429 OPERATION_TIME_LIMIT until `operating_reset_at`);
- `batch`: ≤50 commands, `$result[key][field]` substitution, `halt`, HTTP 200 with failing
  commands in `result_error` (a map, or a list that lost its keys), `[]` for empty maps;
- crm.item.* for leads (1), deals (2) and contacts (3) with the `fm` multifield rules
  (array appends, `n0` keys add, `<id>` keys update, empty value deletes, no typeId no-ops),
  stages `C{n}:…` with semantics, enum user fields, crm.duplicate.findbycomm, timeline
  comments, crm.settings.mode.get, user.current, scope, app.info, event.bind, the offline
  queue with `process_id` reservation, and imconnector send/receive;
- outbound events: form-encoded POSTs with `auth[application_token]`, sent once (no retry),
  in a background thread; events can be "lost" on purpose.

Failure injection: `storm(seconds)`, `inject_html(count)`, `fail_commands(...)`,
`operating_budget(...)`. Inspection: `executed`, `requests`, `max_level`, `dump()`.
"""

from __future__ import annotations

import itertools
import json
import queue
import re
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import quote, unquote_plus, urlsplit

from tests.emulators.http import EmulatorServer

PAGE = 50
ENTITY_NAMES = {1: "LEAD", 2: "DEAL", 3: "CONTACT"}
TIMELINE_TYPES = {"lead": 1, "deal": 2, "contact": 3}
WRITE_METHODS = {
    "crm.item.add",
    "crm.item.update",
    "crm.item.delete",
    "crm.timeline.comment.add",
    "imconnector.send.messages",
    "imconnector.send.status.delivery",
}
COMMON_FIELDS = {"assignedById", "originatorId", "originId", "sourceId", "comments"}
ITEM_FIELDS = {
    1: COMMON_FIELDS | {"title", "name", "lastName", "stageId", "contactId", "opportunity", "fm"},
    2: COMMON_FIELDS | {"title", "stageId", "categoryId", "contactId", "opportunity"},
    3: COMMON_FIELDS | {"name", "lastName", "fm"},
}
INT_FIELDS = {"id", "assignedById", "contactId", "categoryId", "createdBy", "updatedBy"}
DATE_FIELDS = {"createdTime", "updatedTime"}


# --- PHP bracket form, written independently of integrations.bitrix24.rest.phpquery -------------


def parse_php(body: str) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for pair in body.split("&"):
        if not pair:
            continue
        key, _, value = pair.partition("=")
        key, value = unquote_plus(key), unquote_plus(value)
        match = re.match(r"^([^\[]+)((?:\[[^\]]*\])*)$", key)
        if not match:
            root[key] = value
            continue
        parts = [match.group(1), *re.findall(r"\[([^\]]*)\]", match.group(2))]
        node = root
        for i, part in enumerate(parts):
            if part == "":
                part = str(len(node))
            if i == len(parts) - 1:
                node[part] = value
            else:
                node = node.setdefault(part, {})
                if not isinstance(node, dict):
                    break
    return _php_lists(root)


def _php_lists(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _php_lists(v) for k, v in node.items()}
        if node and list(node) == [str(i) for i in range(len(node))]:
            return list(node.values())
    return node


def flatten_php(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, dict):
        out: list[tuple[str, str]] = []
        for k, v in value.items():
            out += flatten_php(v, f"{prefix}[{k}]" if prefix else str(k))
        return out
    if isinstance(value, list):
        return flatten_php({str(i): v for i, v in enumerate(value)}, prefix)
    return [(prefix, "" if value is None else str(value))]


def encode_php(value: dict[str, Any]) -> str:
    return "&".join(f"{quote(k, safe='[]')}={quote(v, safe='')}" for k, v in flatten_php(value))


def php_map(mapping: dict[str, Any]) -> Any:
    """PHP's json_encode of an array: empty → [], keys 0..n-1 → list, else an object."""
    if not mapping:
        return []
    if list(mapping) == [str(i) for i in range(len(mapping))]:
        return list(mapping.values())
    return mapping


# --- errors and records ----------------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, status: int, code: str, description: str) -> None:
        super().__init__(f"{status} {code}: {description}")
        self.status, self.code, self.description = status, code, description


@dataclass
class ListResult:
    rows: Any
    total: int
    next: int | None


@dataclass
class Ctx:
    user_id: int
    app: bool
    auth_connector: str = ""


@dataclass
class Executed:
    """One executed REST method (top-level or inside a batch)."""

    method: str
    params: dict[str, Any]
    ok: bool
    error: str = ""
    in_batch: bool = False
    at: float = 0.0


@dataclass
class Subscription:
    id: int
    event: str
    handler: str
    kind: str  # "webhook" (outgoing webhook from the UI) or "app" (event.bind)
    event_type: str  # online | offline
    application_token: str
    auth_connector: str = ""


@dataclass
class Delivery:
    event: str
    entity_id: Any
    handler: str
    outcome: str  # delivered | lost | failed
    status: int | None = None


@dataclass
class OfflineRecord:
    id: int
    event: str
    entity_id: int
    message_id: str
    timestamp: str
    process_id: str = ""
    error: bool = False


@dataclass
class Failure:
    method: str
    remaining: int
    code: str
    description: str
    status: int
    match: Callable[[dict[str, Any]], bool] | None = None
    hits: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class OperatingBudget:
    cost: float
    limit: float
    window: float
    used: float = 0.0
    window_start: float = 0.0


def _default_statuses() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def add(entity: str, status: str, name: str, sort: int, sem: str, cat: int | None) -> None:
        row = {
            "ID": str(len(rows) + 1),
            "ENTITY_ID": entity,
            "STATUS_ID": status,
            "NAME": name,
            "NAME_INIT": name,
            "SORT": str(sort),
            "SYSTEM": "Y",
            "SEMANTICS": sem or None,
        }
        if cat is not None:
            row["CATEGORY_ID"] = str(cat)
        rows.append(row)

    base = [
        ("NEW", "New", 10, ""),
        ("PREPARATION", "Preparing documents", 20, ""),
        ("EXECUTING", "In progress", 40, ""),
        ("WON", "Deal won", 60, "S"),
        ("LOSE", "Deal lost", 70, "F"),
    ]
    for status, name, sort, sem in base:
        add("DEAL_STAGE", status, name, sort, sem, 0)
    for cat in (3,):
        for status, name, sort, sem in base:
            add(f"DEAL_STAGE_{cat}", f"C{cat}:{status}", name, sort, sem, cat)
        add(f"DEAL_STAGE_{cat}", f"C{cat}:HANDOFF", "Manager needed", 30, "", cat)
    for status, name, sort, sem in [
        ("NEW", "Unassigned", 10, ""),
        ("IN_PROCESS", "In progress", 20, ""),
        ("PROCESSED", "Processed", 30, ""),
        ("CONVERTED", "Good lead", 40, "S"),
        ("JUNK", "Junk lead", 50, "F"),
    ]:
        add("STATUS", status, name, sort, sem, None)
    return rows


def _default_userfields() -> dict[int, list[dict[str, Any]]]:
    def enum(entity: str, options: list[tuple[str, str, str]]) -> dict[str, Any]:
        return {
            "ID": "501" if entity == "CRM_DEAL" else "601",
            "ENTITY_ID": entity,
            "FIELD_NAME": "UF_CRM_CITY",
            "USER_TYPE_ID": "enumeration",
            "XML_ID": "CITY",
            "MULTIPLE": "N",
            "MANDATORY": "N",
            "LIST": [
                {"ID": oid, "SORT": str(10 * (i + 1)), "VALUE": value, "DEF": "N", "XML_ID": xml}
                for i, (oid, value, xml) in enumerate(options)
            ],
        }

    cities = [("45", "Almaty", "ALA"), ("46", "Astana", "NQZ"), ("47", "Шымкент", "CIT")]
    text = {
        "ID": "502",
        "FIELD_NAME": "UF_CRM_ITEMS",
        "USER_TYPE_ID": "string",
        "XML_ID": "ITEMS",
        "MULTIPLE": "N",
        "MANDATORY": "N",
    }
    return {
        2: [enum("CRM_DEAL", cities), {**text, "ENTITY_ID": "CRM_DEAL"}],
        1: [enum("CRM_LEAD", cities), {**text, "ID": "602", "ENTITY_ID": "CRM_LEAD"}],
        3: [],
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    emulator: Bitrix24Emulator

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status, ctype, payload = self.emulator.handle_http(
            self.command, self.path, self.headers.get("Content-Type", ""), body
        )
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _serve
    do_POST = _serve

    def log_message(self, format: str, *args: Any) -> None:
        return


class Bitrix24Emulator:
    def __init__(
        self,
        *,
        rate: float = 2.0,
        burst: int = 50,
        server_tz: str = "+05:00",
        domain: str = "",
        webhook_user_id: int = 1,
        scopes: tuple[str, ...] = ("crm", "user", "imopenlines", "imconnector", "im"),
        leads_enabled: bool = True,
        access_token_ttl: float = 3600.0,
    ) -> None:
        self.lock = threading.RLock()
        self.rate, self.burst = rate, burst
        sign = 1 if server_tz[0] == "+" else -1
        hours, minutes = server_tz[1:].split(":")
        self.tz = timezone(sign * timedelta(hours=int(hours), minutes=int(minutes)))
        self._domain = domain
        self.scopes = list(scopes)
        self.leads_enabled = leads_enabled
        self.access_token_ttl = access_token_ttl
        self.webhook_user_id = webhook_user_id
        self.webhook_code = secrets.token_hex(8)
        self.users: dict[int, dict[str, Any]] = {
            1: {"ID": "1", "NAME": "Integration", "LAST_NAME": "Robot", "EMAIL": "robot@ex.kz"},
            27: {"ID": "27", "NAME": "Klaus", "LAST_NAME": "Weber", "EMAIL": "klaus@ex.kz"},
            31: {"ID": "31", "NAME": "Aigerim", "LAST_NAME": "S", "EMAIL": "aigerim@ex.kz"},
        }
        self.statuses = _default_statuses()
        self.categories = {0: "General", 3: "WhatsApp"}
        self.userfields = _default_userfields()
        # CRM data
        self.items: dict[int, dict[int, dict[str, Any]]] = {1: {}, 2: {}, 3: {}}
        self.comments: dict[int, dict[str, Any]] = {}
        self._ids = {1: itertools.count(301), 2: itertools.count(501), 3: itertools.count(101)}
        self._fm_ids = itertools.count(9001)
        self._comment_ids = itertools.count(7001)
        # rate limits and failure injection
        self.level = 0.0
        self.max_level = 0.0
        self._level_at = time.monotonic()
        self.bucket_rejections = 0
        self.storm_rejections = 0
        self.storm_until = 0.0
        self.html_remaining = 0
        self.html_status = 502
        self.html_served = 0
        self.op_rejections = 0
        self.budgets: dict[str, OperatingBudget] = {}
        self.failures: list[Failure] = []
        self.result_error_as_list = False
        # observation
        self.requests: list[dict[str, Any]] = []
        self.executed: list[Executed] = []
        # events
        self.subscriptions: list[Subscription] = []
        self._sub_ids = itertools.count(900)
        self.deliveries: list[Delivery] = []
        self._lose: list[tuple[str | None, Any, int]] = []
        self._outbox: queue.Queue[tuple[str, str, Any, str] | None] = queue.Queue()
        self._in_flight = 0
        self.offline: list[OfflineRecord] = []
        self._offline_ids = itertools.count(1)
        self._last_ping = 0.0
        # the local application
        self.app_client_id = "local." + secrets.token_hex(6)
        self.app_client_secret = secrets.token_hex(16)
        self.app_application_token = secrets.token_hex(16)
        self.member_id = secrets.token_hex(16)
        self.access_tokens: dict[str, float] = {}
        self.refresh_tokens: set[str] = set()
        self.app_user_id = 1
        self.features = {"rest_offline_extended": "Y"}
        # imconnector
        self.connectors: dict[str, dict[str, Any]] = {}
        self.connector_chats: dict[str, dict[str, Any]] = {}
        self.connector_messages: list[dict[str, Any]] = []
        self.deliveries_acked: list[dict[str, Any]] = []
        self._im_chat_ids = itertools.count(1701)
        self._im_message_ids = itertools.count(86401)
        self._server: EmulatorServer | None = None
        self._threads: list[threading.Thread] = []

    # --- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> Bitrix24Emulator:
        handler = type("Handler", (_Handler,), {"emulator": self})
        self._server = EmulatorServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        serve = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        deliver = threading.Thread(target=self._deliver_loop, daemon=True)
        self._threads = [serve, deliver]
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._outbox.put(None)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "use the emulator as a context manager"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).netloc

    @property
    def domain(self) -> str:
        """The portal's domain as events report it (default: the emulator's host:port)."""
        return self._domain or self.host

    @property
    def webhook_url(self) -> str:
        return f"{self.base_url}/rest/{self.webhook_user_id}/{self.webhook_code}/"

    # --- controls -------------------------------------------------------------------------

    def storm(self, seconds: float) -> None:
        """Answer every request 503 QUERY_LIMIT_EXCEEDED for `seconds`."""
        with self.lock:
            self.storm_until = time.monotonic() + seconds

    def inject_html(self, count: int, status: int = 502) -> None:
        """The next `count` requests get an HTML error page from the proxy."""
        with self.lock:
            self.html_remaining, self.html_status = count, status

    def fail_commands(
        self,
        method: str,
        count: int,
        *,
        code: str = "",
        description: str = "Access denied",
        status: int = 400,
        match: Callable[[dict[str, Any]], bool] | None = None,
    ) -> Failure:
        """The next `count` executions of `method` (matching `match`) fail with this error."""
        failure = Failure(method, count, code, description, status, match)
        with self.lock:
            self.failures.append(failure)
        return failure

    def operating_budget(self, method: str, *, cost: float, limit: float, window: float) -> None:
        """Each call of `method` uses `cost` seconds; above `limit` per `window` → 429."""
        with self.lock:
            self.budgets[method] = OperatingBudget(cost, limit, window)

    def lose_events(self, count: int, *, event: str | None = None, entity_id: Any = None) -> None:
        """Do not deliver the next `count` matching online events (network loss)."""
        with self.lock:
            self._lose.append((event, None if entity_id is None else str(entity_id), count))

    def add_outgoing_webhook(self, handler: str, events: list[str]) -> str:
        """An outgoing webhook created in the portal UI; returns its application token."""
        token = secrets.token_hex(16)
        with self.lock:
            for event in events:
                self.subscriptions.append(
                    Subscription(
                        next(self._sub_ids), event.upper(), handler, "webhook", "online", token
                    )
                )
        return token

    def issue_app_tokens(self) -> tuple[str, str]:
        """A fresh access and refresh token for the local application (as after install)."""
        with self.lock:
            access, refresh = secrets.token_hex(16), secrets.token_hex(16)
            self.access_tokens[access] = time.time() + self.access_token_ttl
            self.refresh_tokens.add(refresh)
            return access, refresh

    def expire_access_tokens(self) -> None:
        with self.lock:
            for token in self.access_tokens:
                self.access_tokens[token] = 0.0

    def install_app(self, handler: str) -> int:
        """POST ONAPPINSTALL to `handler`, as the portal does when the app is installed."""
        access, refresh = self.issue_app_tokens()
        body = {
            "event": "ONAPPINSTALL",
            "data": {"VERSION": "1", "ACTIVE": "Y", "INSTALLED": "Y", "LANGUAGE_ID": "en"},
            "ts": str(int(time.time())),
            "auth": {
                "access_token": access,
                "expires": str(int(time.time() + self.access_token_ttl)),
                "expires_in": str(int(self.access_token_ttl)),
                "scope": ",".join(self.scopes),
                "domain": self.domain,
                "server_endpoint": f"{self.base_url}/rest/",
                "status": "L",
                "client_endpoint": f"{self.base_url}/rest/",
                "member_id": self.member_id,
                "user_id": str(self.app_user_id),
                "refresh_token": refresh,
                "application_token": self.app_application_token,
            },
        }
        return self._post(handler, encode_php(body))

    def operator_reply(self, chat_external_id: str, text: str, user_id: int = 27) -> dict[str, Any]:
        """An operator answers in the Open Channel: ONIMCONNECTORMESSAGEADD to the app."""
        with self.lock:
            chat = self.connector_chats[chat_external_id]
            message = {"chat_id": chat["chat_id"], "message_id": next(self._im_message_ids)}
            payload = {
                "CONNECTOR": chat["connector"],
                "LINE": chat["line"],
                "MESSAGES": [
                    {
                        "im": message,
                        "message": {"user_id": user_id, "text": text},
                        "chat": {"id": chat_external_id},
                    }
                ],
            }
            subs = [s for s in self.subscriptions if s.event == "ONIMCONNECTORMESSAGEADD"]
        for sub in subs:
            self._enqueue_event(sub, "ONIMCONNECTORMESSAGEADD", payload, message["message_id"])
        return message

    def set_item(self, entity_type: int, item_id: int, by_user: int = 27, **fields: Any) -> None:
        """A manager edits an entity in the portal UI (fires the update event)."""
        with self.lock:
            item = self.items[entity_type][item_id]
            self._write_fields(entity_type, item, fields, update=True)
            self._touch(item, by_user)
        self._emit(entity_type, "UPDATE", item_id, "")

    def wait_events(self, timeout: float = 20.0) -> None:
        """Block until every queued outbound event was delivered (or lost)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self._in_flight == 0 and self._outbox.empty():
                    return
            time.sleep(0.02)
        raise AssertionError("outbound events still pending")

    # --- inspection -----------------------------------------------------------------------

    def calls(self, method: str, *, ok: bool | None = None) -> list[Executed]:
        with self.lock:
            return [e for e in self.executed if e.method == method and (ok is None or e.ok == ok)]

    def writes(self) -> list[Executed]:
        with self.lock:
            return [e for e in self.executed if e.method in WRITE_METHODS and e.ok]

    def contacts(self) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(json.dumps(v)) for v in self.items[3].values()]

    def deals(self) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(json.dumps(v)) for v in self.items[2].values()]

    def leads(self) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(json.dumps(v)) for v in self.items[1].values()]

    def comments_on(self, entity_type: str, entity_id: int) -> list[dict[str, Any]]:
        with self.lock:
            return [
                dict(c)
                for c in self.comments.values()
                if c["ENTITY_TYPE"] == entity_type and c["ENTITY_ID"] == str(entity_id)
            ]

    def dump(self) -> bytes:
        """The CRM's whole state, canonical, for byte-identical comparisons."""
        with self.lock:
            state = {
                "items": {ENTITY_NAMES[t]: self.items[t] for t in sorted(self.items)},
                "comments": self.comments,
            }
            return json.dumps(state, sort_keys=True, ensure_ascii=False).encode()

    # --- HTTP -----------------------------------------------------------------------------

    def handle_http(
        self, verb: str, path: str, content_type: str, body: bytes
    ) -> tuple[int, str, bytes]:
        parts = urlsplit(path)
        params: dict[str, Any] = parse_php(parts.query) if parts.query else {}
        text = body.decode("utf-8", "replace")
        if text:
            if "json" in content_type:
                try:
                    loaded = json.loads(text)
                except ValueError:
                    return self._error(400, "INVALID_REQUEST", "Invalid JSON")
                if isinstance(loaded, dict):
                    params.update(loaded)
            else:
                params.update(parse_php(text))
        route = parts.path
        if route.rstrip("/") == "/oauth/token":
            return self._oauth(params)
        match = re.match(r"^/rest/(?:(\d+)/([^/]+)/)?([a-zA-Z0-9_.]+?)(?:\.json)?$", route)
        if not match:
            return 404, "text/html", b"<html><body>404 Not Found</body></html>"
        uid, code, method = match.groups()
        method = method.lower()
        with self.lock:
            gate = self._gate(method)
            if gate is not None:
                return gate
            try:
                ctx = self._authenticate(uid, code, params)
                outcome = self._dispatch(method, params, ctx, in_batch=False)
            except ApiError as exc:
                self.requests[-1]["error"] = exc.code
                return self._error(exc.status, exc.code, exc.description)
            envelope: dict[str, Any] = {
                "result": outcome.rows if isinstance(outcome, ListResult) else outcome
            }
            if isinstance(outcome, ListResult):
                envelope["total"] = outcome.total
                if outcome.next is not None:
                    envelope["next"] = outcome.next
            envelope["time"] = self._time_block(method)
            return 200, "application/json", json.dumps(envelope, ensure_ascii=False).encode()

    def _error(self, status: int, code: str, description: str) -> tuple[int, str, bytes]:
        payload = {"error": code, "error_description": description}
        return status, "application/json", json.dumps(payload).encode()

    def _gate(self, method: str) -> tuple[int, str, bytes] | None:
        """Proxy errors, storms and the leaky bucket, before the method runs."""
        now = time.monotonic()
        self.level = max(0.0, self.level - (now - self._level_at) * self.rate)
        self._level_at = now
        record: dict[str, Any] = {"method": method, "t": time.time(), "level": self.level}
        self.requests.append(record)
        if self.html_remaining > 0:
            self.html_remaining -= 1
            self.html_served += 1
            record["error"] = "html"
            page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
            return self.html_status, "text/html", page
        if now < self.storm_until:
            self.storm_rejections += 1
            record["error"] = "storm"
            return self._error(503, "QUERY_LIMIT_EXCEEDED", "Too many requests")
        if self.level + 1 > self.burst:
            self.bucket_rejections += 1
            record["error"] = "QUERY_LIMIT_EXCEEDED"
            return self._error(503, "QUERY_LIMIT_EXCEEDED", "Too many requests")
        self.level += 1
        self.max_level = max(self.max_level, self.level)
        record["level"] = self.level
        return None

    def _authenticate(self, uid: str | None, code: str | None, params: dict[str, Any]) -> Ctx:
        connector = str(params.get("auth_connector") or "")
        if uid is not None:
            if int(uid) != self.webhook_user_id or not secrets.compare_digest(
                code or "", self.webhook_code
            ):
                raise ApiError(401, "NO_AUTH_FOUND", "Wrong authorization data")
            return Ctx(user_id=int(uid), app=False, auth_connector=connector)
        token = str(params.get("auth") or "")
        if token not in self.access_tokens:
            raise ApiError(401, "NO_AUTH_FOUND", "Wrong authorization data")
        if self.access_tokens[token] < time.time():
            raise ApiError(401, "expired_token", "The access token provided has expired.")
        return Ctx(user_id=self.app_user_id, app=True, auth_connector=connector)

    def _oauth(self, params: dict[str, Any]) -> tuple[int, str, bytes]:
        with self.lock:
            self.requests.append({"method": "oauth.token", "t": time.time()})
            if (
                params.get("grant_type") != "refresh_token"
                or params.get("client_id") != self.app_client_id
                or params.get("client_secret") != self.app_client_secret
            ):
                return self._error(401, "invalid_client", "Invalid client credentials")
            old = str(params.get("refresh_token") or "")
            if old not in self.refresh_tokens:
                return self._error(400, "invalid_grant", "Invalid refresh token")
            self.refresh_tokens.discard(old)
            access, refresh = self.issue_app_tokens()
        payload = {
            "access_token": access,
            "expires": int(time.time() + self.access_token_ttl),
            "expires_in": int(self.access_token_ttl),
            "scope": ",".join(self.scopes),
            "domain": self.domain,
            "server_endpoint": f"{self.base_url}/rest/",
            "status": "L",
            "client_endpoint": f"{self.base_url}/rest/",
            "member_id": self.member_id,
            "user_id": self.app_user_id,
            "refresh_token": refresh,
        }
        return 200, "application/json", json.dumps(payload).encode()

    def _time_block(self, method: str) -> dict[str, Any]:
        now = time.time()
        start = now - 0.004
        budget = self.budgets.get(method)
        operating, reset_at = 0.0, int(now + 600)
        if budget is not None:
            operating, reset_at = budget.used, int(budget.window_start + budget.window) + 1
        return {
            "start": start,
            "finish": now,
            "duration": now - start,
            "processing": 0.002,
            "date_start": self._fmt(start),
            "date_finish": self._fmt(now),
            "operating_reset_at": reset_at,
            "operating": operating,
        }

    def _fmt(self, ts: float) -> str:
        return datetime.fromtimestamp(int(ts), self.tz).isoformat()

    def _parse_date(self, value: Any) -> datetime:
        parsed = datetime.fromisoformat(str(value))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=self.tz)

    # --- dispatch -------------------------------------------------------------------------

    def _dispatch(self, method: str, params: dict[str, Any], ctx: Ctx, *, in_batch: bool) -> Any:
        record = Executed(method, params, ok=False, in_batch=in_batch, at=time.time())
        self.executed.append(record)
        for failure in self.failures:
            if (
                failure.method == method
                and failure.remaining > 0
                and (failure.match is None or failure.match(params))
            ):
                failure.remaining -= 1
                failure.hits.append(params)
                record.error = failure.code or failure.description
                raise ApiError(failure.status, failure.code, failure.description)
        budget = self.budgets.get(method)
        if budget is not None:
            now = time.time()
            if now >= budget.window_start + budget.window:
                budget.window_start, budget.used = now, 0.0
            if budget.used >= budget.limit:
                self.op_rejections += 1
                record.error = "OPERATION_TIME_LIMIT"
                raise ApiError(
                    429, "OPERATION_TIME_LIMIT", "Method is blocked due to operation time limit."
                )
            budget.used += budget.cost
        handler = getattr(self, "m_" + method.replace(".", "_"), None)
        if handler is None:
            record.error = "ERROR_METHOD_NOT_FOUND"
            raise ApiError(404, "ERROR_METHOD_NOT_FOUND", "Method not found!")
        try:
            result = handler(params, ctx)
        except ApiError as exc:
            record.error = exc.code or exc.description
            raise
        record.ok = True
        return result

    # --- batch ----------------------------------------------------------------------------

    def m_batch(self, params: dict[str, Any], ctx: Ctx) -> Any:
        cmd = params.get("cmd") or {}
        if isinstance(cmd, list):
            cmd = {str(i): c for i, c in enumerate(cmd)}
        if len(cmd) > 50:
            raise ApiError(400, "ERROR_BATCH_LENGTH_EXCEEDED", "Max batch length exceeded")
        halt = str(params.get("halt", "0")) in {"1", "true", "Y", "True"}
        results: dict[str, Any] = {}
        errors: dict[str, Any] = {}
        totals: dict[str, Any] = {}
        nexts: dict[str, Any] = {}
        times: dict[str, Any] = {}
        for key, command in cmd.items():
            command = self._substitute(str(command), results)
            method, _, query = command.partition("?")
            method = method.strip().lower().removesuffix(".json")
            sub_params = parse_php(query)
            if "auth" in params:
                sub_params.setdefault("auth", params["auth"])
            try:
                if method == "batch":
                    raise ApiError(405, "ERROR_BATCH_METHOD_NOT_ALLOWED", "Method not allowed")
                sub_ctx = Ctx(ctx.user_id, ctx.app, str(sub_params.get("auth_connector") or ""))
                outcome = self._dispatch(method, sub_params, sub_ctx, in_batch=True)
            except ApiError as exc:
                errors[key] = {"error": exc.code, "error_description": exc.description}
                if halt:
                    break
                continue
            if isinstance(outcome, ListResult):
                results[key] = outcome.rows
                totals[key] = outcome.total
                if outcome.next is not None:
                    nexts[key] = outcome.next
            else:
                results[key] = outcome
            block = self._time_block(method)
            times[key] = {
                k: block[k]
                for k in (
                    "start",
                    "finish",
                    "duration",
                    "processing",
                    "date_start",
                    "date_finish",
                    "operating_reset_at",
                    "operating",
                )
            }
        error_payload: Any = php_map(errors)
        if self.result_error_as_list and errors:
            error_payload = list(errors.values())
        return {
            "result": php_map(results),
            "result_error": error_payload,
            "result_total": php_map(totals),
            "result_next": php_map(nexts),
            "result_time": php_map(times),
        }

    def _substitute(self, command: str, results: dict[str, Any]) -> str:
        def replace(match: re.Match[str]) -> str:
            node: Any = results.get(match.group(1))
            for part in re.findall(r"\[([^\]]*)\]", match.group(2) or ""):
                if isinstance(node, dict):
                    node = node.get(part)
                elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                else:
                    node = None
            return "" if node is None or isinstance(node, dict | list) else quote(str(node))

        return re.sub(r"\$result\[([^\]]+)\]((?:\[[^\]]*\])*)", replace, command)

    # --- general methods -------------------------------------------------------------------

    def m_user_current(self, params: dict[str, Any], ctx: Ctx) -> Any:
        return {**self.users[ctx.user_id], "ACTIVE": True}

    def m_user_get(self, params: dict[str, Any], ctx: Ctx) -> Any:
        filt = params.get("filter") or params.get("FILTER") or {}
        rows = list(self.users.values())
        if "ID" in params:
            rows = [u for u in rows if u["ID"] == str(params["ID"])]
        for key, value in filt.items():
            rows = [
                u for u in rows if str(u.get(key.lstrip("=")) or "").lower() == str(value).lower()
            ]
        return ListResult(rows, len(rows), None)

    def m_scope(self, params: dict[str, Any], ctx: Ctx) -> Any:
        return list(self.scopes)

    def m_app_info(self, params: dict[str, Any], ctx: Ctx) -> Any:
        if not ctx.app:
            raise ApiError(401, "WRONG_AUTH_TYPE", "Current authorization type is denied")
        return {
            "ID": 7,
            "CODE": self.app_client_id,
            "VERSION": 1,
            "STATUS": "L",
            "INSTALLED": True,
            "PAYMENT_EXPIRED": "N",
            "DAYS": None,
            "LANGUAGE_ID": "en",
            "LICENSE": "en_project",
            "LICENSE_TYPE": "project",
            "LICENSE_FAMILY": "project",
        }

    def m_feature_get(self, params: dict[str, Any], ctx: Ctx) -> Any:
        return {"value": self.features.get(str(params.get("CODE") or params.get("code")), "N")}

    # --- CRM metadata ---------------------------------------------------------------------

    def m_crm_settings_mode_get(self, params: dict[str, Any], ctx: Ctx) -> Any:
        return 1 if self.leads_enabled else 2

    def m_crm_status_list(self, params: dict[str, Any], ctx: Ctx) -> Any:
        filt = params.get("filter") or {}
        rows = [dict(r) for r in self.statuses if self._match(r, filt, legacy=True)]
        rows.sort(key=lambda r: (r["ENTITY_ID"], int(r["SORT"])))
        return ListResult(rows, len(rows), None)

    def m_crm_category_list(self, params: dict[str, Any], ctx: Ctx) -> Any:
        if int(params.get("entityTypeId") or 0) != 2:
            return ListResult({"categories": []}, 0, None)
        rows = [
            {
                "id": cid,
                "name": name,
                "sort": 100 * (i + 1),
                "entityTypeId": 2,
                "isDefault": "Y" if cid == 0 else "N",
            }
            for i, (cid, name) in enumerate(sorted(self.categories.items()))
        ]
        return ListResult({"categories": rows}, len(rows), None)

    def _userfield_list(self, entity_type: int) -> ListResult:
        rows = json.loads(json.dumps(self.userfields[entity_type]))
        return ListResult(rows, len(rows), None)

    def m_crm_deal_userfield_list(self, params: dict[str, Any], ctx: Ctx) -> Any:
        return self._userfield_list(2)

    def m_crm_lead_userfield_list(self, params: dict[str, Any], ctx: Ctx) -> Any:
        return self._userfield_list(1)

    def m_crm_contact_userfield_list(self, params: dict[str, Any], ctx: Ctx) -> Any:
        return self._userfield_list(3)

    # --- crm.item.* -----------------------------------------------------------------------

    def _entity_type(self, params: dict[str, Any]) -> int:
        try:
            entity_type = int(params.get("entityTypeId") or 0)
        except ValueError:
            entity_type = 0
        if entity_type not in self.items:
            raise ApiError(400, "NOT_FOUND", "Smart process not found")
        if entity_type == 1 and not self.leads_enabled:
            raise ApiError(400, "ACCESS_DENIED", "Leads are disabled on this portal")
        return entity_type

    def _stages_of(self, entity_type: int, category: int) -> list[str]:
        entity = (
            "STATUS"
            if entity_type == 1
            else ("DEAL_STAGE" if category == 0 else f"DEAL_STAGE_{category}")
        )
        rows = [r for r in self.statuses if r["ENTITY_ID"] == entity]
        return [r["STATUS_ID"] for r in sorted(rows, key=lambda r: int(r["SORT"]))]

    def _uf_defs(self, entity_type: int) -> dict[str, dict[str, Any]]:
        return {uf["FIELD_NAME"]: uf for uf in self.userfields[entity_type]}

    def _uf_name(self, name: str) -> str:
        """`ufCrm_CITY` (crm.item casing) → `UF_CRM_CITY`."""
        if name.startswith("ufCrm_"):
            return "UF_CRM_" + name[len("ufCrm_") :]
        return name

    def _write_fields(
        self, entity_type: int, item: dict[str, Any], fields: dict[str, Any], *, update: bool
    ) -> None:
        allowed = ITEM_FIELDS[entity_type]
        ufs = self._uf_defs(entity_type)
        for raw_name, value in fields.items():
            name = self._uf_name(raw_name)
            if name == "fm":
                if "fm" in allowed:
                    self._write_fm(item, value, update=update)
                continue
            if name.startswith("UF_"):
                definition = ufs.get(name)
                if definition is None:
                    continue
                if definition["USER_TYPE_ID"] == "enumeration" and value not in ("", None):
                    options = {o["ID"] for o in definition["LIST"]}
                    if str(value) not in options:
                        raise ApiError(400, "", f"Invalid value for {name}: {value}")
                item[name] = "" if value is None else str(value)
                continue
            if name not in allowed:
                continue
            if name in INT_FIELDS:
                text = str(value if value is not None else "").strip()
                value = int(text) if text else None
                if name != "categoryId" and value == 0:
                    value = None
            item[name] = value
        category = int(item.get("categoryId") or 0)
        if entity_type == 2 and category not in self.categories:
            raise ApiError(400, "", f"Category {category} not found")
        if entity_type in (1, 2):
            stages = self._stages_of(entity_type, category)
            if not item.get("stageId"):
                item["stageId"] = stages[0]
            elif item["stageId"] not in stages:
                raise ApiError(400, "", f"Stage {item['stageId']} is not in this pipeline")
            semantics = next(
                (r["SEMANTICS"] for r in self.statuses if r["STATUS_ID"] == item["stageId"]), None
            )
            item["stageSemanticId"] = semantics or "P"
        if item.get("contactId") and int(item["contactId"]) not in self.items[3]:
            raise ApiError(400, "", f"Contact {item['contactId']} not found")

    def _fm_entry(self, element: dict[str, Any]) -> dict[str, Any] | None:
        type_id = str(element.get("typeId") or "").upper()
        value = str(element.get("value") or "")
        if not type_id or not value:
            return None
        return {
            "id": next(self._fm_ids),
            "typeId": type_id,
            "valueType": str(element.get("valueType") or "WORK").upper(),
            "value": value,
        }

    def _write_fm(self, item: dict[str, Any], value: Any, *, update: bool) -> None:
        entries: list[dict[str, Any]] = item.setdefault("fm", [])
        if isinstance(value, str):
            return  # silently ignored, as the real portal does
        if isinstance(value, list):  # an array always appends
            for element in value:
                if isinstance(element, dict) and (entry := self._fm_entry(element)):
                    entries.append(entry)
            return
        if not isinstance(value, dict):
            return
        for key, element in value.items():
            if not isinstance(element, dict):
                continue
            if not update or not str(key).isdigit():  # n0, n1… add
                if entry := self._fm_entry(element):
                    entries.append(entry)
                continue
            if not element.get("typeId"):
                continue  # no typeId: the call "succeeds" and changes nothing
            existing = next((e for e in entries if e["id"] == int(key)), None)
            if existing is None:
                continue
            if str(element.get("value") or "") == "":
                entries.remove(existing)
            else:
                existing["value"] = str(element["value"])
                if element.get("valueType"):
                    existing["valueType"] = str(element["valueType"]).upper()

    def _touch(self, item: dict[str, Any], user_id: int) -> None:
        item["updatedTime"] = self._fmt(time.time())
        item["updatedBy"] = user_id
        if "fm" in item:
            item["hasPhone"] = "Y" if any(e["typeId"] == "PHONE" for e in item["fm"]) else "N"

    def _render(
        self, entity_type: int, item: dict[str, Any], params: dict[str, Any], select: Any = None
    ) -> dict[str, Any]:
        original = str(params.get("useOriginalUfNames") or "N").upper() == "Y"
        out: dict[str, Any] = {"entityTypeId": entity_type}
        wanted = None
        if select and select != ["*"]:
            wanted = {self._uf_name(str(s)) for s in select}
        for key, value in item.items():
            if wanted is not None and key != "id":
                if key.startswith("UF_"):
                    if key not in wanted and "UF_*" not in wanted and "uf_*" not in wanted:
                        continue
                elif key not in wanted:
                    continue
            elif wanted is None and key == "fm" and select == ["*"]:
                continue
            name = key if original or not key.startswith("UF_CRM_") else "ufCrm_" + key[7:]
            out[name] = json.loads(json.dumps(value))
        return out

    def m_crm_item_add(self, params: dict[str, Any], ctx: Ctx) -> Any:
        entity_type = self._entity_type(params)
        fields = params.get("fields") or {}
        if not isinstance(fields, dict):
            raise ApiError(400, "", "fields must be an object")
        now = self._fmt(time.time())
        item: dict[str, Any] = {
            "id": next(self._ids[entity_type]),
            "createdTime": now,
            "createdBy": ctx.user_id,
            "assignedById": ctx.user_id,
        }
        if entity_type == 3 or entity_type == 1:
            item["fm"] = []
        if entity_type == 2:
            item["categoryId"] = 0
        self._write_fields(entity_type, item, fields, update=False)
        self._touch(item, ctx.user_id)
        self.items[entity_type][item["id"]] = item
        self._emit(entity_type, "ADD", item["id"], ctx.auth_connector)
        return {"item": self._render(entity_type, item, params)}

    def m_crm_item_update(self, params: dict[str, Any], ctx: Ctx) -> Any:
        entity_type = self._entity_type(params)
        item = self._get(entity_type, params.get("id"))
        fields = params.get("fields") or {}
        if not isinstance(fields, dict):
            raise ApiError(400, "", "fields must be an object")
        candidate = json.loads(json.dumps(item))
        self._write_fields(entity_type, candidate, fields, update=True)
        item.clear()
        item.update(candidate)
        self._touch(item, ctx.user_id)
        self._emit(entity_type, "UPDATE", item["id"], ctx.auth_connector)
        return {"item": self._render(entity_type, item, params)}

    def m_crm_item_delete(self, params: dict[str, Any], ctx: Ctx) -> Any:
        entity_type = self._entity_type(params)
        item = self._get(entity_type, params.get("id"))
        del self.items[entity_type][item["id"]]
        self._emit(entity_type, "DELETE", item["id"], ctx.auth_connector)
        return []

    def m_crm_item_get(self, params: dict[str, Any], ctx: Ctx) -> Any:
        entity_type = self._entity_type(params)
        return {"item": self._render(entity_type, self._get(entity_type, params.get("id")), params)}

    def _get(self, entity_type: int, raw_id: Any) -> dict[str, Any]:
        try:
            item = self.items[entity_type].get(int(raw_id))
        except (TypeError, ValueError):
            item = None
        if item is None:
            raise ApiError(400, "NOT_FOUND", "Element not found")
        return item

    def m_crm_item_list(self, params: dict[str, Any], ctx: Ctx) -> Any:
        entity_type = self._entity_type(params)
        filt = params.get("filter") or {}
        rows = [i for i in self.items[entity_type].values() if self._match(i, filt, legacy=False)]
        rows = self._order(rows, params.get("order") or {"id": "ASC"})
        page, total, nxt = self._page(rows, params.get("start"))
        select = params.get("select") or ["*"]
        if isinstance(select, dict):
            select = list(select.values())
        items = [self._render(entity_type, i, params, select) for i in page]
        return ListResult({"items": items}, total, nxt)

    def _page(self, rows: list[Any], start: Any) -> tuple[list[Any], int, int | None]:
        offset = int(start or 0)
        if offset == -1:
            return rows[:PAGE], 0, None
        page = rows[offset : offset + PAGE]
        nxt = offset + PAGE if offset + PAGE < len(rows) else None
        return page, len(rows), nxt

    def _order(self, rows: list[dict[str, Any]], order: dict[str, Any]) -> list[dict[str, Any]]:
        for key, direction in reversed(list(order.items())):
            rows = sorted(
                rows,
                key=lambda r, k=key: self._sortable(r.get(k) if k in r else r.get(k.upper())),
                reverse=str(direction).upper() == "DESC",
            )
        return rows

    def _sortable(self, value: Any) -> Any:
        if value is None:
            return (0, 0)
        try:
            return (1, float(value))
        except (TypeError, ValueError):
            try:
                return (2, self._parse_date(value).timestamp())
            except ValueError:
                return (3, str(value))

    def _match(self, row: dict[str, Any], filt: dict[str, Any], *, legacy: bool) -> bool:
        for raw_key, expected in filt.items():
            match = re.match(r"^(!@|@|>=|<=|!=|!|>|<|=%|%=|%|=)?(.*)$", raw_key)
            assert match
            op, name = match.group(1) or "=", self._uf_name(match.group(2))
            actual = row.get(name)
            if not self._compare(op, name, actual, expected):
                return False
        return True

    def _compare(self, op: str, name: str, actual: Any, expected: Any) -> bool:
        if op in {"@", "!@"}:
            values = expected if isinstance(expected, list) else [expected]
            inside = str(actual) in {str(v) for v in values}
            return inside if op == "@" else not inside
        if op in {"%", "=%", "%="}:
            return str(expected).strip("%").lower() in str(actual or "").lower()
        if name in DATE_FIELDS or name in {"TIMESTAMP_X", "CREATED"}:
            if actual is None:
                return False
            left, right = self._parse_date(actual), self._parse_date(expected)
        elif re.fullmatch(r"-?\d+", str(actual)) and re.fullmatch(r"-?\d+", str(expected)):
            left, right = int(str(actual)), int(str(expected))
        else:
            left, right = str(actual if actual is not None else ""), str(expected)
        if op == "=":
            return bool(left == right)
        if op in {"!", "!="}:
            return bool(left != right)
        if op == ">":
            return bool(left > right)
        if op == ">=":
            return bool(left >= right)
        if op == "<":
            return bool(left < right)
        return bool(left <= right)

    # --- duplicates, timeline -------------------------------------------------------------

    def m_crm_duplicate_findbycomm(self, params: dict[str, Any], ctx: Ctx) -> Any:
        comm = str(params.get("type") or "").upper()
        if not comm:
            raise ApiError(
                400, "Communication type is not defined", "Parameter 'type' is required."
            )
        values = params.get("values") or []
        if isinstance(values, str):
            values = [values]
        if not values:
            raise ApiError(400, "Communication values is not defined", "")
        if len(values) > 20:
            raise ApiError(400, "", "Too many values")
        digits = {re.sub(r"\D", "", str(v)) if comm == "PHONE" else str(v).lower() for v in values}
        wanted = str(params.get("entity_type") or "").upper()
        found: dict[str, list[int]] = {}
        for entity_type, name in ((1, "LEAD"), (3, "CONTACT")):
            if wanted and wanted != name:
                continue
            for item in self.items[entity_type].values():
                for entry in item.get("fm", []):
                    value = entry["value"]
                    norm = re.sub(r"\D", "", value) if comm == "PHONE" else value.lower()
                    if entry["typeId"] == comm and norm in digits:
                        found.setdefault(name, []).append(item["id"])
                        break
        return found or []

    def m_crm_timeline_comment_add(self, params: dict[str, Any], ctx: Ctx) -> Any:
        fields = params.get("fields") or {}
        entity_type = TIMELINE_TYPES.get(str(fields.get("ENTITY_TYPE") or "").lower())
        try:
            entity_id = int(fields.get("ENTITY_ID") or 0)
        except ValueError:
            entity_id = 0
        if entity_type is None or entity_id not in self.items[entity_type]:
            raise ApiError(400, "", "Entity not found")
        comment = str(fields.get("COMMENT") or "")
        if not comment:
            raise ApiError(400, "", "Empty comment")
        comment_id = next(self._comment_ids)
        self.comments[comment_id] = {
            "ID": str(comment_id),
            "ENTITY_ID": str(entity_id),
            "ENTITY_TYPE": str(fields["ENTITY_TYPE"]).lower(),
            "CREATED": self._fmt(time.time()),
            "COMMENT": comment,
            "AUTHOR_ID": str(ctx.user_id),
        }
        return comment_id

    def m_crm_timeline_comment_list(self, params: dict[str, Any], ctx: Ctx) -> Any:
        filt = params.get("filter") or {}
        rows = [c for c in self.comments.values() if self._match(c, filt, legacy=True)]
        rows = self._order(rows, params.get("order") or {"ID": "ASC"})
        page, total, nxt = self._page(rows, params.get("start"))
        select = params.get("select")
        if select:
            keep = {str(s) for s in (select.values() if isinstance(select, dict) else select)}
            page = [{k: v for k, v in r.items() if k in keep or k == "ID"} for r in page]
        return ListResult([dict(r) for r in page], total, nxt)

    # --- events ---------------------------------------------------------------------------

    def m_event_bind(self, params: dict[str, Any], ctx: Ctx) -> Any:
        if not ctx.app:
            raise ApiError(401, "WRONG_AUTH_TYPE", "Current authorization type is denied")
        event = str(params.get("event") or params.get("EVENT") or "").upper()
        event_type = str(params.get("event_type") or "online").lower()
        handler = str(params.get("handler") or params.get("HANDLER") or "")
        if event_type == "online" and not handler:
            raise ApiError(400, "ERROR_EVENT_HANDLER", "Handler required")
        connector = str(params.get("auth_connector") or "")
        for sub in self.subscriptions:
            if (sub.kind, sub.event, sub.handler, sub.event_type) == (
                "app",
                event,
                handler,
                event_type,
            ):
                raise ApiError(400, "ERROR_HANDLER_ALREADY_EXIST", "Handler already exists!")
        self.subscriptions.append(
            Subscription(
                next(self._sub_ids),
                event,
                handler,
                "app",
                event_type,
                self.app_application_token,
                connector,
            )
        )
        return True

    def m_event_get(self, params: dict[str, Any], ctx: Ctx) -> Any:
        return [
            {
                "event": s.event,
                "handler": s.handler,
                "auth_type": "0",
                "offline": 1 if s.event_type == "offline" else 0,
            }
            for s in self.subscriptions
            if s.kind == "app"
        ]

    def _emit(self, entity_type: int, action: str, entity_id: int, auth_connector: str) -> None:
        event = f"ONCRM{ENTITY_NAMES[entity_type]}{action}"
        for sub in [s for s in self.subscriptions if s.event == event]:
            if sub.event_type == "offline":
                if sub.auth_connector and sub.auth_connector == auth_connector:
                    continue  # our own write under this connector: not queued back to us
                self._offline_upsert(event, entity_id)
            else:
                self._enqueue_event(sub, event, {"FIELDS": {"ID": entity_id}}, entity_id)

    def _enqueue_event(self, sub: Subscription, event: str, data: Any, entity_id: Any) -> None:
        with self.lock:
            for index, (want_event, want_id, count) in enumerate(self._lose):
                if count > 0 and want_event in (None, event) and want_id in (None, str(entity_id)):
                    self._lose[index] = (want_event, want_id, count - 1)
                    self.deliveries.append(Delivery(event, entity_id, sub.handler, "lost"))
                    return
            body = {
                "event": event,
                "event_handler_id": str(sub.id),
                "data": data,
                "ts": str(int(time.time())),
                "auth": {
                    "domain": self.domain,
                    "client_endpoint": f"{self.base_url}/rest/",
                    "server_endpoint": f"{self.base_url}/rest/",
                    "member_id": self.member_id,
                    "application_token": sub.application_token,
                },
            }
            if sub.kind == "app":
                access, _refresh = self.issue_app_tokens()
                body["auth"].update(
                    {
                        "access_token": access,
                        "expires_in": "3600",
                        "scope": ",".join(self.scopes),
                        "status": "L",
                    }
                )
            self._in_flight += 1
        self._outbox.put((sub.handler, encode_php(body), entity_id, event))

    def _deliver_loop(self) -> None:
        while True:
            job = self._outbox.get()
            if job is None:
                return
            handler, body, entity_id, event = job
            status = self._post(handler, body)
            with self.lock:
                outcome = "delivered" if status == 200 else "failed"
                self.deliveries.append(Delivery(event, entity_id, handler, outcome, status))
                self._in_flight -= 1

    def _post(self, url: str, body: str) -> int:
        request = urllib.request.Request(
            url,
            data=body.encode(),
            method="POST",
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "User-Agent": "Bitrix24 Webhook Engine",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)
        except OSError:
            return 0

    # --- offline events -------------------------------------------------------------------

    def _offline_upsert(self, event: str, entity_id: int) -> None:
        now = self._fmt(time.time())
        for record in self.offline:
            if record.event == event and record.entity_id == entity_id and not record.process_id:
                record.timestamp = now  # the queue keeps the latest state per object
                break
        else:
            record_id = next(self._offline_ids)
            self.offline.append(
                OfflineRecord(record_id, event, entity_id, f"{event}:{entity_id}", now)
            )
        # ONOFFLINEEVENT: an online "the queue is not empty" ping, at most once a second.
        if time.monotonic() - self._last_ping >= 1.0:
            self._last_ping = time.monotonic()
            for sub in [s for s in self.subscriptions if s.event == "ONOFFLINEEVENT"]:
                self._enqueue_event(sub, "ONOFFLINEEVENT", [], 0)

    def _offline_row(self, record: OfflineRecord) -> dict[str, Any]:
        return {
            "ID": str(record.id),
            "TIMESTAMP_X": record.timestamp,
            "EVENT_NAME": record.event,
            "EVENT_DATA": {"FIELDS": {"ID": record.entity_id}},
            "EVENT_ADDITIONAL": {"user_id": "1"},
            "MESSAGE_ID": record.message_id,
        }

    def m_event_offline_get(self, params: dict[str, Any], ctx: Ctx) -> Any:
        if not ctx.app:
            raise ApiError(401, "WRONG_AUTH_TYPE", "Current authorization type is denied")
        clear = str(params.get("clear", "1")) not in {"0", "N", "false"}
        limit = int(params.get("limit") or 50)
        want_errors = str(params.get("error", "0")) in {"1", "Y"}
        process_id = str(params.get("process_id") or "")
        if process_id:
            rows = [r for r in self.offline if r.process_id == process_id and not r.error]
        else:
            rows = [r for r in self.offline if not r.process_id and r.error == want_errors]
        rows = sorted(rows, key=lambda r: (r.timestamp, r.id))[:limit]
        if clear:
            for record in rows:
                self.offline.remove(record)
            return {"process_id": None, "events": [self._offline_row(r) for r in rows]}
        if not process_id:
            process_id = secrets.token_hex(16)
            for record in rows:
                record.process_id = process_id
        return {"process_id": process_id, "events": [self._offline_row(r) for r in rows]}

    def _offline_selected(self, params: dict[str, Any]) -> list[OfflineRecord]:
        process_id = str(params.get("process_id") or "")
        if not process_id:
            raise ApiError(400, "", "process_id is required")
        rows = [r for r in self.offline if r.process_id == process_id]
        ids = params.get("id")
        message_ids = params.get("message_id")
        if ids:
            wanted = {str(i) for i in (ids if isinstance(ids, list) else [ids])}
            rows = [r for r in rows if str(r.id) in wanted]
        elif message_ids:
            wanted = {
                str(i) for i in (message_ids if isinstance(message_ids, list) else [message_ids])
            }
            rows = [r for r in rows if r.message_id in wanted]
        return rows

    def m_event_offline_clear(self, params: dict[str, Any], ctx: Ctx) -> Any:
        for record in self._offline_selected(params):
            self.offline.remove(record)
        return True

    def m_event_offline_error(self, params: dict[str, Any], ctx: Ctx) -> Any:
        for record in self._offline_selected(params):
            record.error, record.process_id = True, ""
        return True

    def m_event_offline_list(self, params: dict[str, Any], ctx: Ctx) -> Any:
        rows = [
            {**self._offline_row(r), "PROCESS_ID": r.process_id, "ERROR": "1" if r.error else "0"}
            for r in self.offline
        ]
        return ListResult(rows[:PAGE], len(rows), None)

    # --- imconnector ----------------------------------------------------------------------

    def _app_only(self, ctx: Ctx) -> None:
        if not ctx.app:
            raise ApiError(401, "WRONG_AUTH_TYPE", "Current authorization type is denied")

    def m_imconnector_register(self, params: dict[str, Any], ctx: Ctx) -> Any:
        self._app_only(ctx)
        connector = str(params.get("ID") or "").lower()
        self.connectors.setdefault(connector, {"lines": {}})["name"] = params.get("NAME")
        return {"result": True}

    def m_imconnector_activate(self, params: dict[str, Any], ctx: Ctx) -> Any:
        self._app_only(ctx)
        connector = self.connectors.get(str(params.get("CONNECTOR") or "").lower())
        if connector is None:
            raise ApiError(400, "CONNECTOR_NOT_FOUND", "Connector not registered")
        connector["lines"][str(params.get("LINE"))] = str(params.get("ACTIVE", "1")) == "1"
        return True

    def m_imconnector_connector_data_set(self, params: dict[str, Any], ctx: Ctx) -> Any:
        self._app_only(ctx)
        return True

    def m_imconnector_status(self, params: dict[str, Any], ctx: Ctx) -> Any:
        self._app_only(ctx)
        connector = self.connectors.get(str(params.get("CONNECTOR") or "").lower()) or {}
        active = connector.get("lines", {}).get(str(params.get("LINE")), False)
        return {
            "LINE": str(params.get("LINE")),
            "CONNECTOR": params.get("CONNECTOR"),
            "ERROR": False,
            "CONFIGURED": active,
            "STATUS": active,
        }

    def m_imconnector_send_messages(self, params: dict[str, Any], ctx: Ctx) -> Any:
        self._app_only(ctx)
        connector = str(params.get("CONNECTOR") or "").lower()
        line = str(params.get("LINE") or "")
        if not self.connectors.get(connector, {}).get("lines", {}).get(line):
            raise ApiError(400, "CONNECTOR_NOT_ACTIVE", "Connector is not active on this line")
        results = []
        for message in params.get("MESSAGES") or []:
            user = message.get("user") or {}
            name = str(user.get("name") or "")
            if len(name) > 25 or not re.fullmatch(r"[\w\s'\-]*", name):
                results.append({"SUCCESS": False, "ERROR": "invalid user name"})
                continue
            chat_id = str((message.get("chat") or {}).get("id") or "")
            chat = self.connector_chats.setdefault(
                chat_id,
                {
                    "chat_id": next(self._im_chat_ids),
                    "connector": connector,
                    "line": line,
                    "session": str(300 + len(self.connector_chats)),
                },
            )
            self.connector_messages.append({"chat": chat_id, **(message.get("message") or {})})
            results.append(
                {
                    "user": user.get("id"),
                    "chat": {"id": chat_id},
                    "message": (message.get("message") or {}).get("id"),
                    "SUCCESS": True,
                    "session": {"ID": chat["session"], "CHAT_ID": str(chat["chat_id"])},
                }
            )
        return {"SUCCESS": True, "DATA": {"RESULT": results}}

    def m_imconnector_send_status_delivery(self, params: dict[str, Any], ctx: Ctx) -> Any:
        self._app_only(ctx)
        results = []
        for message in params.get("MESSAGES") or []:
            self.deliveries_acked.append(json.loads(json.dumps(message)))
            results.append({"SUCCESS": True})
        return {"SUCCESS": True, "DATA": {"RESULT": results}}


def iter_form(body: str) -> Iterator[tuple[str, str]]:
    """The flat key/value pairs of a form body (for tests that check the raw encoding)."""
    for pair in body.split("&"):
        key, _, value = pair.partition("=")
        yield unquote_plus(key), unquote_plus(value)
