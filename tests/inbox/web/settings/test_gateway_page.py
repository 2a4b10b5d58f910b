"""The channel page of a linked-device gateway (Evolution API, WAHA): its fields, "Test
connection" against the gateways' emulators, and the settings to give the gateway."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.test import Client, override_settings

from inbox.conversations.models import Channel, Membership
from inbox.web.settings import gateway_setup
from integrations.whatsapp.gateways import evolution_events, waha_events
from tests import factories
from tests.emulators.evolution import EvolutionEmulator
from tests.emulators.waha import WahaEmulator
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db

EVO_TOKEN = "evo-instance-token-5f0c2a9e"
WAHA_KEY = "waha-api-key-81d3b7c4e6"
PUBLIC = "https://inbox.example.com"


def _client(user: Any, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def _evolution(owner: Tenant, url: str = "http://127.0.0.1:9", **kw: Any) -> Channel:
    fields = {"bridge_url": url, "bridge_token": EVO_TOKEN, "gateway_instance": "shop"}
    return factories.channel(owner.business, kind=Channel.Kind.EVOLUTION, **{**fields, **kw})


def _waha(owner: Tenant, url: str = "http://127.0.0.1:9", **kw: Any) -> Channel:
    fields = {"bridge_url": url, "bridge_token": WAHA_KEY, "gateway_instance": "default"}
    return factories.channel(owner.business, kind=Channel.Kind.WAHA, **{**fields, **kw})


def _page(owner: Tenant, channel: Channel) -> str:
    response = _client(owner.admin).get(f"/inbox/settings/channels/{channel.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def _labels(page: str) -> dict[str, str]:
    """Each input's name → the label text in front of it."""
    found = re.findall(
        r"<span>([^<]*)</span>\s*<(?:input|select|textarea)[^>]*name=\"(\w+)\"", page
    )
    return {name: label for label, name in found}


def _setting(page: str, name: str) -> str:
    match = re.search(rf'data-setting="{name}">(.*?)</(?:code|pre)>', page, re.S)
    assert match, f"no {name} in the settings box"
    return html.unescape(match.group(1))


def _test(owner: Tenant, channel: Channel) -> tuple[str, str]:
    """Press "Test connection" (htmx): (data-linked, the answer's text)."""
    response = _client(owner.admin).post(
        f"/inbox/settings/channels/{channel.pk}/test-connection/", HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    body = response.content.decode()
    linked = re.search(r'data-linked="(\w*)"', body)
    assert linked
    return linked.group(1), " ".join(re.sub(r"<[^>]+>", " ", body).split())


@override_settings(PUBLIC_BASE_URL=PUBLIC)
def test_an_evolution_channel_shows_its_fields_and_the_exact_gateway_settings() -> None:
    a = tenant("A")
    channel = _evolution(a, url="http://evolution:8080")
    page = _page(a, channel)

    labels = _labels(page)
    assert labels["bridge_url"] == "Gateway URL"
    assert labels["bridge_token"] == "Instance token"
    assert labels["gateway_instance"] == "Instance"
    for cloud_field in ("phone_number_id", "display_phone_number", "access_token"):
        assert cloud_field not in labels
    assert EVO_TOKEN not in page
    assert 'data-action="test-connection"' in page

    webhook = f"{PUBLIC}/webhooks/evolution/{channel.pk}/"
    assert _setting(page, "webhook-url") == webhook
    assert _setting(page, "env") == "AUTHENTICATION_EXPOSE_IN_FETCH_INSTANCES=true"
    assert "MESSAGES_UPSERT" in _setting(page, "events")
    command = _setting(page, "command")
    assert "curl -X POST http://evolution:8080/webhook/set/shop" in command
    assert "apikey: <your channel key>" in command
    body = json.loads(command.split("-d ", 1)[1].strip().strip("'"))
    assert body["webhook"]["url"] == webhook
    assert body["webhook"]["enabled"] is True


@override_settings(PUBLIC_BASE_URL=PUBLIC)
def test_a_waha_channel_shows_its_session_and_a_session_config_signed_with_the_channel_key() -> (
    None
):
    a = tenant("A")
    channel = _waha(a, url="http://waha:3000")
    page = _page(a, channel)

    labels = _labels(page)
    assert labels["bridge_url"] == "Gateway URL"
    assert labels["bridge_token"] == "API key"
    assert labels["gateway_instance"] == "Session"
    assert "phone_number_id" not in labels
    assert "access_token" not in labels
    assert WAHA_KEY not in page
    assert "AUTHENTICATION_EXPOSE" not in page

    config = json.loads(_setting(page, "config"))
    (hook,) = config["webhooks"]
    assert hook["url"] == f"{PUBLIC}/webhooks/waha/{channel.pk}/"
    assert hook["hmac"] == {"key": "<your channel key>"}
    assert {"message", "message.ack", "session.status"} <= set(hook["events"])
    assert "curl -X PUT http://waha:3000/api/sessions/default" in _setting(page, "command")


def test_other_kinds_show_no_gateway_fields_box_or_test() -> None:
    a = tenant("A")
    cloud = factories.channel(a.business, kind=Channel.Kind.CLOUD_API)
    bridge = factories.channel(a.business, kind=Channel.Kind.BRIDGE)
    for channel in (cloud, bridge, a.channel):
        page = _page(a, channel)
        assert "gateway_instance" not in _labels(page)
        assert "gateway-setup" not in page
        assert "test-connection" not in page
    assert "phone_number_id" in _labels(_page(a, cloud))
    assert "bridge_url" in _labels(_page(a, bridge))


@pytest.mark.parametrize(
    ("state", "linked", "says"),
    [("open", "yes", "Linked"), ("close", "no", "state close"), ("connecting", "no", "connecting")],
)
def test_test_connection_reads_the_evolution_instance_state(
    state: str, linked: str, says: str
) -> None:
    a = tenant("A")
    with EvolutionEmulator(token=EVO_TOKEN, instance="shop", state=state) as evo:
        answer = _test(a, _evolution(a, url=evo.base_url))
    assert answer[0] == linked
    assert says in answer[1]


def test_test_connection_says_what_went_wrong_with_evolution_and_never_fails() -> None:
    a = tenant("A")
    with EvolutionEmulator(token="another-token", instance="shop") as evo:
        assert _test(a, _evolution(a, url=evo.base_url)) == (
            "no",
            "Not linked: Evolution API refused the key (give the instance token)",
        )
        other = _evolution(a, url=evo.base_url, gateway_instance="nope")
        other.bridge_token = "another-token"
        other.save()
        assert _test(a, other) == ("no", "Not linked: Evolution API has no such instance")
        stopped = _evolution(a, url=evo.base_url)
    assert _test(a, stopped) == ("no", "Not linked: Evolution API is unreachable")
    refused = _evolution(a, url="http://169.254.169.254/")
    linked, text = _test(a, refused)
    assert linked == "no"
    assert "not allowed" in text


def test_test_connection_reads_the_waha_session_and_escapes_what_comes_back() -> None:
    a = tenant("A")
    with WahaEmulator(api_key=WAHA_KEY) as waha:
        channel = _waha(a, url=waha.base_url)
        assert _test(a, channel)[0] == "yes"
        waha.status = "SCAN_QR_CODE"
        linked, text = _test(a, channel)
        assert linked == "no"
        assert "scan the QR code" in text
        named = _waha(a, url=waha.base_url, gateway_instance="<img src=x onerror=alert(1)>")
        response = _client(a.admin).post(
            f"/inbox/settings/channels/{named.pk}/test-connection/", HTTP_HX_REQUEST="true"
        )
        assert b"<img src=x" not in response.content
        assert b"&lt;img src=x" in response.content
        wrong_key = _waha(a, url=waha.base_url, bridge_token="not-the-key")
        assert _test(a, wrong_key) == ("no", "Not linked: WAHA refused the API key")
    assert _test(a, channel) == ("no", "Not linked: WAHA is unreachable")


def test_test_connection_without_javascript_answers_on_the_page() -> None:
    a = tenant("A")
    with WahaEmulator(api_key=WAHA_KEY) as waha:
        channel = _waha(a, url=waha.base_url)
        response = _client(a.admin).post(
            f"/inbox/settings/channels/{channel.pk}/test-connection/", follow=True
        )
    assert response.redirect_chain[-1][0] == f"/inbox/settings/channels/{channel.pk}/"
    assert "Linked: session “default” is WORKING" in response.content.decode()


def test_test_connection_is_a_post_of_the_channels_own_admins_only() -> None:
    a, b = tenant("A"), tenant("B")
    with EvolutionEmulator(token=EVO_TOKEN, instance="shop") as evo:
        channel = _evolution(a, url=evo.base_url)
        url = f"/inbox/settings/channels/{channel.pk}/test-connection/"
        assert _client(b.admin).post(url, HTTP_HX_REQUEST="true").status_code == 404
        assert _client(b.admin).get(f"/inbox/settings/channels/{channel.pk}/").status_code == 404
        assert _client(a.manager).post(url, HTTP_HX_REQUEST="true").status_code == 403
        assert _client(a.admin).get(url).status_code == 405
        assert _client(a.admin, csrf=True).post(url).status_code == 403
        assert Membership.objects.filter(user=b.admin, business=a.business).count() == 0


def _gateway_form(**overrides: str) -> dict[str, str]:
    form = {
        "name": "Shop number", "is_active": "on", "language": "en",
        "bridge_url": "https://evolution.example.net", "bridge_token": "",
        "gateway_instance": "shop", "debounce_seconds": "4", "idle_release_hours": "4",
        "late_answer_cutoff_minutes": "30", "voice_confidence_threshold": "0.6",
        "silent_alert_minutes": "120",
    }  # fmt: skip
    form.update(overrides)
    return form


@pytest.mark.parametrize("address", ["http://169.254.169.254/", "http://10.0.0.5:8080"])
def test_a_gateway_url_on_a_refused_address_is_not_saved(address: str) -> None:
    a = tenant("A")
    channel = _evolution(a, url="https://evolution.example.net")
    response = _client(a.admin).post(
        f"/inbox/settings/channels/{channel.pk}/", _gateway_form(bridge_url=address)
    )
    assert response.status_code == 200
    errors = re.findall(r'<small class="error">(.*?)</small>', response.content.decode())
    assert errors
    assert "address" in " ".join(errors).lower()
    channel.refresh_from_db()
    assert channel.bridge_url == "https://evolution.example.net"


def test_saving_a_gateway_channel_keeps_its_key_and_its_cloud_fields() -> None:
    a = tenant("A")
    channel = _waha(a, url="https://waha.example.net", phone_number_id="106540352299999")
    response = _client(a.admin).post(
        f"/inbox/settings/channels/{channel.pk}/",
        _gateway_form(bridge_url="https://waha2.example.net", gateway_instance="shop-2"),
    )
    assert response.status_code == 302
    channel.refresh_from_db()
    assert channel.bridge_url == "https://waha2.example.net"
    assert channel.gateway_instance == "shop-2"
    assert channel.bridge_token == WAHA_KEY
    assert channel.phone_number_id == "106540352299999"
    missing = _client(a.admin).post(
        f"/inbox/settings/channels/{channel.pk}/", _gateway_form(gateway_instance="")
    )
    assert missing.status_code == 200  # an instance/session name is required


def test_the_events_on_the_page_are_the_ones_the_webhook_readers_act_on() -> None:
    evolution_read = {"messages.upsert", "messages.set", "messages.update", "connection.update"}
    shown = {name.lower().replace("_", ".") for name in gateway_setup.EVOLUTION_EVENTS}
    assert evolution_read <= shown
    for event in gateway_setup.WAHA_EVENTS:
        body = waha_events.normalise({"event": event, "payload": {}}, channel_id=1)
        assert f"event {event!r}" not in body.skipped
    assert evolution_events.event_name({"event": "MESSAGES_UPSERT"}) == "messages.upsert"
