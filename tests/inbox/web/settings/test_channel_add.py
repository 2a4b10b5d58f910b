"""Adding a channel from the web: the kinds explained, each kind's own fields and the command
line's rules (required credentials, the outbound-address rule, a taken number refused in neutral
words), and the new channel's page showing where the provider must send events."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.test import Client, override_settings

from inbox.conversations.models import NUMBER_REFUSED, Channel
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db

NEW = "/inbox/settings/channels/new/"


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _add(owner: Tenant, kind: str, **fields: str) -> Any:
    return _client(owner.admin).post(f"{NEW}?kind={kind}", fields)


def test_the_kinds_are_offered_in_words_and_only_to_admins_of_their_own_business() -> None:
    a, b = tenant("A"), tenant("B")
    page = _client(a.admin).get(NEW)
    assert page.status_code == 200
    assert [k for k, _, _ in page.context["kinds"]] == [
        "cloud_api", "evolution", "waha", "bridge", "sandbox",
    ]  # fmt: skip
    assert "WhatsApp Manager" in page.content.decode()
    # The channels page leads here.
    assert NEW in _client(a.admin).get("/inbox/settings/channels/").content.decode()

    assert _client(a.manager).get(NEW).status_code == 403
    assert _client(a.admin).get(NEW, {"business": b.business.pk}).status_code == 404
    assert _client(a.admin).get(NEW, {"kind": "telegram"}).status_code == 404
    assert _client(a.admin).post(f"{NEW}?business={b.business.pk}&kind=sandbox").status_code == 404
    assert not b.business.channels.exclude(pk=b.channel.pk).exists()


@override_settings(
    WHATSAPP_VERIFY_TOKEN="verify-me-3f9a",
    PUBLIC_BASE_URL="https://inbox.example.com",
)
def test_a_cloud_api_number_needs_its_id_and_token_and_then_shows_where_meta_posts() -> None:
    a = tenant("A")
    form = _client(a.admin).get(f"{NEW}?kind=cloud_api").context["form"]
    assert list(form.fields) == [
        "name", "language", "phone_number_id", "display_phone_number", "access_token", "waba_id",
    ]  # fmt: skip
    assert not form.fields["waba_id"].required  # only templates need it

    refused = _add(a, "cloud_api", name="Main", phone_number_id="106540352299999")
    assert refused.status_code == 200
    assert "access_token" in refused.context["form"].errors
    assert not Channel.objects.filter(phone_number_id="106540352299999").exists()

    added = _add(
        a,
        "cloud_api",
        phone_number_id="106540352299999",
        display_phone_number="+7 701 555 0000",
        access_token="EAAG-secret-token",
        waba_id="102290129340398",
    )
    channel = Channel.objects.get(phone_number_id="106540352299999")
    assert channel.waba_id == "102290129340398"
    assert added.url == f"/inbox/settings/channels/{channel.pk}/"
    assert (channel.business, channel.kind, channel.name) == (
        a.business, "cloud_api", "+7 701 555 0000",
    )  # fmt: skip
    assert channel.access_token == "EAAG-secret-token"
    page = _client(a.admin).get(added.url).content.decode()
    assert "https://inbox.example.com/webhooks/whatsapp/" in page
    assert "verify-me-3f9a" in page
    assert "messages, message_template_status_update" in page
    assert "EAAG-secret-token" not in page  # write-only, as on the edit page

    again = _add(a, "cloud_api", phone_number_id="106540352299999", access_token="t")
    assert html.escape(NUMBER_REFUSED) in again.content.decode()
    assert Channel.objects.filter(phone_number_id="106540352299999").count() == 1


def test_a_gateway_outside_the_allowed_addresses_is_refused_and_an_allowed_one_added() -> None:
    a = tenant("A")
    fields = {"bridge_url": "http://10.20.30.40:3000", "bridge_token": "k", "name": "Phone"}
    refused = _add(a, "waha", gateway_instance="default", **fields)
    assert "bridge_url" in refused.context["form"].errors
    assert not a.business.channels.filter(kind="waha").exists()

    form = _client(a.admin).get(f"{NEW}?kind=waha").context["form"]
    assert form["gateway_instance"].value() == "default"  # WAHA's own session name
    added = _add(
        a, "waha", gateway_instance="default", **{**fields, "bridge_url": "http://127.0.0.1:3000"}
    )
    channel = a.business.channels.get(kind="waha")
    assert added.url == f"/inbox/settings/channels/{channel.pk}/"
    assert (channel.bridge_url, channel.gateway_instance) == ("http://127.0.0.1:3000", "default")
    page = _client(a.admin).get(added.url).content.decode()
    assert f"/webhooks/waha/{channel.pk}/" in page


def test_a_sandbox_needs_nothing_but_may_have_a_name() -> None:
    a = tenant("A")
    added = _add(a, "sandbox")
    channel = a.business.channels.exclude(pk=a.channel.pk).get()
    assert added.url == f"/inbox/settings/channels/{channel.pk}/"
    assert (channel.kind, channel.name) == ("sandbox", "Sandbox (test chat in the browser)")
    assert a.business.channels.count() == 2
