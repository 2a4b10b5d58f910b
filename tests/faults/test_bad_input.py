"""Fault 6: bad input, against the real ASGI application and the real ingest consumer.

Fuzzed webhook bodies and headers (hypothesis), oversized bodies and uploads, invalid UTF-8 and
a customer message carrying HTML/JS. Whatever comes in, the answer is 200 or a 4xx — never a
500 — and nothing is half-written: a refused request queues nothing, and everything a 200
queued is stored by the consumer (none of it ends in the dead-letter stream). Every log line
the application writes meanwhile (through the production formatter and privacy filter, every
logger at DEBUG) is scanned: no app secret, no bridge token, no customer phone number.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import string
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from assistant.models import PriceList
from inbox.conversations import ingest
from inbox.conversations.ingest.worker import IngestWorker
from inbox.conversations.models import Channel, Chat, Message
from inbox.platform.logs import JsonLines, PrivacyFilter
from inbox.platform.redis import get_redis
from inbox.site.asgi import application
from integrations.whatsapp.webhooks import routes
from tests import factories
from tests.emulators.graph_api import contact, envelope, sign, text_message

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

SECRET = "fuzz-app-secret"
PNID = "106540352249911"
BRIDGE_TOKEN = "fuzz-bridge-token"
OK_OR_CLIENT_ERROR = {200, 400, 403, 404, 405, 413}
FUZZ = hypothesis_settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


CUSTOMER_PHONE = "77011234567"


@pytest.fixture(autouse=True)
def _logs_keep_no_secret_and_no_phone() -> Iterator[None]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    handler.addFilter(PrivacyFilter())
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
    written = stream.getvalue()
    for secret in (SECRET, BRIDGE_TOKEN, CUSTOMER_PHONE):
        leaked = [line for line in written.splitlines() if secret in line]
        assert leaked == [], leaked[:3]


@pytest.fixture(autouse=True)
def _webhook_settings(settings: Any) -> None:
    settings.WHATSAPP_APP_SECRET = SECRET
    routes.clear()


@pytest.fixture
def channels() -> Iterator[tuple[Channel, Channel]]:
    cloud = factories.channel(kind=Channel.Kind.CLOUD_API, phone_number_id=PNID)
    bridge = factories.channel(cloud.business, kind=Channel.Kind.BRIDGE, bridge_token=BRIDGE_TOKEN)
    return cloud, bridge


def _post(path: str, body: bytes, headers: dict[str, str] | list[tuple[bytes, bytes]]) -> int:
    async def go() -> int:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            response = await client.post(path, content=body, headers=headers)
            return response.status_code

    return asyncio.run(go())


def _queued() -> int:
    return int(get_redis().xlen(ingest.STREAM))


def _consume_everything() -> None:
    """Run the real consumer over what the webhooks queued; nothing may fail."""
    worker = IngestWorker(name="fuzz", block_ms=1, max_attempts=1)
    while worker.step():
        pass
    dead = get_redis().xrange(ingest.DEAD_LETTER_STREAM)
    assert dead == [], [fields[b"why"] for _id, fields in dead]
    assert _queued() == 0


def _check(status: int, before: int) -> None:
    assert status in OK_OR_CLIENT_ERROR, status
    if status != 200:
        assert _queued() == before, "a refused request queued something"


# --- strategies ------------------------------------------------------------------------------

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=40)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
# Customer text as it can really arrive: any Unicode, control characters and NUL included.
customer_text = st.text(st.characters(codec="utf-8"), max_size=200)
message_types = st.sampled_from(
    ["text", "image", "audio", "document", "location", "contacts", "interactive", "button",
     "reaction", "sticker", "order", "system", "unsupported", "video", "", "TEXT"]
)  # fmt: skip


@st.composite
def mangled_message(draw: st.DrawFn) -> dict[str, Any]:
    """A Cloud API message object with any field possibly missing, wrong-typed or odd."""
    kind = draw(message_types)
    message: dict[str, Any] = {
        "from": draw(st.one_of(st.just("77011234567"), st.text(max_size=20), json_value)),
        "id": draw(
            st.one_of(st.text(string.ascii_letters + ".=", min_size=1, max_size=30), json_value)
        ),
        "timestamp": draw(st.one_of(st.just("1732870000"), st.text(max_size=12), json_value)),
        "type": kind,
        kind or "x": draw(st.one_of(st.fixed_dictionaries({"body": customer_text}), json_value)),
    }
    for key in draw(st.lists(st.sampled_from(list(message)), max_size=2)):
        message.pop(key, None)
    if draw(st.booleans()):
        message["context"] = draw(json_value)
    return message


@st.composite
def mangled_envelope(draw: st.DrawFn) -> Any:
    messages = draw(st.lists(mangled_message(), max_size=3))
    body = envelope(PNID, messages=messages, contacts=[contact("77011234567")])
    value = body["entry"][0]["changes"][0]["value"]
    if draw(st.booleans()):
        value[draw(st.sampled_from(["contacts", "statuses", "metadata", "errors"]))] = draw(
            json_value
        )
    if draw(st.integers(0, 5)) == 0:
        return draw(json_value)  # not an envelope at all
    return body


# --- fuzzing ---------------------------------------------------------------------------------


@FUZZ
@given(body=mangled_envelope())
def test_fuzzed_cloud_api_bodies_are_200_or_4xx_and_never_half_stored(
    channels: tuple[Channel, Channel], body: Any
) -> None:
    raw = json.dumps(body).encode()
    before = _queued()

    status = _post("/webhooks/whatsapp/", raw, {"X-Hub-Signature-256": sign(SECRET, raw)})

    _check(status, before)
    _consume_everything()


@FUZZ
@given(raw=st.binary(max_size=2000), sign_it=st.booleans())
def test_arbitrary_bytes_signed_or_not_are_refused_cleanly(
    channels: tuple[Channel, Channel], raw: bytes, sign_it: bool
) -> None:
    headers = {"X-Hub-Signature-256": sign(SECRET, raw)} if sign_it else {}
    before = _queued()

    _check(_post("/webhooks/whatsapp/", raw, headers), before)
    _consume_everything()


header_bytes = st.binary(max_size=60).map(lambda b: bytes(c for c in b if c not in b"\r\n\0"))


@FUZZ
@given(
    headers=st.lists(
        st.tuples(
            st.sampled_from(
                [
                    b"x-hub-signature-256",
                    b"authorization",
                    b"content-type",
                    b"content-length-x",
                    b"x-a",
                ]
            ),
            header_bytes,
        ),
        max_size=4,
    ),
    text=customer_text,
)
def test_fuzzed_headers_on_both_webhooks_are_200_or_4xx(
    channels: tuple[Channel, Channel], headers: list[tuple[bytes, bytes]], text: str
) -> None:
    _cloud, bridge = channels
    raw = json.dumps(envelope(PNID, messages=[text_message("77011234567", text)])).encode()
    before = _queued()

    _check(_post("/webhooks/whatsapp/", raw, headers), before)
    _check(_post(f"/webhooks/bridge/{bridge.pk}/", raw, headers), before)
    _consume_everything()


@FUZZ
@given(text=customer_text, name=st.text(max_size=60))
def test_any_customer_text_is_stored_exactly_as_sent(
    channels: tuple[Channel, Channel], text: str, name: str
) -> None:
    message = text_message("77011234567", text)
    raw = json.dumps(envelope(PNID, messages=[message],
                              contacts=[contact("77011234567", name=name)])).encode()  # fmt: skip

    assert _post("/webhooks/whatsapp/", raw, {"X-Hub-Signature-256": sign(SECRET, raw)}) == 200
    _consume_everything()

    stored = Message.objects.get(provider_message_id=message["id"])
    assert stored.text == text.replace("\x00", "\ufffd")


# --- sizes and encodings ---------------------------------------------------------------------


def test_oversized_webhook_bodies_are_413_and_queue_nothing(
    channels: tuple[Channel, Channel], settings: Any
) -> None:
    settings.WEBHOOK_MAX_BODY_BYTES = 64 * 1024
    huge = json.dumps(envelope(PNID, messages=[text_message("77011234567", "x" * 70_000)]))
    raw = huge.encode()
    _cloud, bridge = channels

    assert _post("/webhooks/whatsapp/", raw, {"X-Hub-Signature-256": sign(SECRET, raw)}) == 413
    assert _post(f"/webhooks/bridge/{bridge.pk}/", raw,
                 {"Authorization": f"Bearer {BRIDGE_TOKEN}"}) == 413  # fmt: skip
    assert _queued() == 0


def test_invalid_utf8_is_400_and_queues_nothing(channels: tuple[Channel, Channel]) -> None:
    raw = b'{"object": "whatsapp_business_account", "entry": [{"id": "\xff\xfe\xc3("}]}'

    assert _post("/webhooks/whatsapp/", raw, {"X-Hub-Signature-256": sign(SECRET, raw)}) == 400
    assert _queued() == 0


def test_oversized_form_posts_and_uploads_are_refused_not_500(client: Any, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    biz = factories.business()
    sandbox = factories.channel(biz, kind=Channel.Kind.SANDBOX)
    client.force_login(factories.manager(biz))

    page = client.post(f"/inbox/sandbox/{sandbox.pk}/send/", {"text": "x" * 5000})

    assert page.status_code == 400
    assert not Message.objects.exists()

    from assistant.knowledge import price_import

    big = SimpleUploadedFile(
        "p.csv", b"sku,name,price\n" + b"A,chair,1\n" * (price_import.MAX_FILE_BYTES // 10 + 1)
    )
    client.force_login(factories.manager(biz, role="admin"))
    page = client.post("/inbox/settings/price-list/", {"target": f"b{biz.pk}", "file": big})
    assert page.status_code == 200
    assert "too large" in page.content.decode()
    assert not PriceList.objects.exists()


# --- HTML and script in customer content -------------------------------------------------------

SCRIPT = "<script>alert('xss')</script><img src=x onerror=alert(1)>"


def test_html_and_script_from_a_customer_are_stored_verbatim_and_shown_escaped(
    channels: tuple[Channel, Channel], admin_client: Any, client: Any
) -> None:
    manager = factories.manager(channels[0].business)
    client.force_login(manager)
    message = text_message("77011234567", SCRIPT)
    raw = json.dumps(envelope(PNID, messages=[message],
                              contacts=[contact("77011234567", name=SCRIPT)])).encode()  # fmt: skip

    assert _post("/webhooks/whatsapp/", raw, {"X-Hub-Signature-256": sign(SECRET, raw)}) == 200
    _consume_everything()

    stored = Message.objects.get(provider_message_id=message["id"])
    assert stored.text == SCRIPT
    chat = Chat.objects.get(pk=stored.chat_id)
    for page in (
        client.get("/inbox/"),  # the manager's chat list shows the customer's name
        admin_client.get(f"/admin/inbox/chat/{chat.pk}/change/"),  # the text, too
    ):
        html = page.content.decode()
        assert page.status_code == 200
        assert "<script>alert" not in html
        assert "<img src=x" not in html
        assert "&lt;script&gt;alert(" in html
