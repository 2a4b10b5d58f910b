"""URLs typed by business admins never make the server call inside its own network unless the
operator allowed that host (the tests' settings allow 127.0.0.1, where the emulators listen)."""

from __future__ import annotations

from typing import Any

import pytest

from inbox.conversations.models import Channel
from inbox.conversations.transports import PermanentSendError
from inbox.platform import egress
from integrations.bitrix24.rest.client import Bitrix24Client, WebhookAuth
from integrations.bitrix24.rest.errors import PermanentError
from integrations.bitrix24.rest.limiter import LeakyBucket
from integrations.bitrix24.setup import config
from integrations.whatsapp.bridge import BridgeTransport
from tests import factories
from tests.emulators.bridge import BridgeEmulator

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "https://10.0.0.8/rest/1/abc/",
        "http://192.168.1.1/",
        "http://127.0.0.2:6379/",
        "http://[::ffff:127.0.0.2]/",
        "http://0.0.0.0:8000/",
        "file:///etc/passwd",
        "gopher://8.8.8.8/",
    ],
)
def test_private_local_and_odd_urls_are_refused(url: str) -> None:
    with pytest.raises(egress.EgressRefused):
        egress.check(url)


def test_public_addresses_and_the_operators_own_hosts_pass(settings: Any) -> None:
    egress.check("https://8.8.8.8/rest/1/abc/")
    egress.check("http://127.0.0.1:9000/send")  # allowed by the tests' settings
    settings.OUTBOUND_ALLOWED_HOSTS = ["10.0.5.0/24", "bridge.internal"]
    egress.check("http://10.0.5.7/send")
    egress.check("http://bridge.internal:3000/send")
    with pytest.raises(egress.EgressRefused):
        egress.check("http://10.0.6.7/send")


def _bridge_chat(url: str) -> Any:
    channel = factories.channel(kind=Channel.Kind.BRIDGE, bridge_token="t-1", bridge_url=url)
    return factories.chat(channel)


def test_a_bridge_url_inside_the_network_gets_no_request_and_no_token() -> None:
    with BridgeEmulator(token="t-1", host="127.0.0.2") as bridge:
        chat = _bridge_chat(bridge.base_url)
        with pytest.raises(PermanentSendError) as refused:
            BridgeTransport(chat.channel).send_text(chat, "hello", client_message_id="ID1")
    assert refused.value.code == "egress"
    assert "OUTBOUND_ALLOWED_HOSTS" in refused.value.title
    assert bridge.sent == []


def test_the_operator_can_allow_a_bridge_next_to_the_inbox(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.2"]
    with BridgeEmulator(token="t-1", host="127.0.0.2") as bridge:
        chat = _bridge_chat(bridge.base_url)
        BridgeTransport(chat.channel).send_text(chat, "hello", client_message_id="ID2")
    assert [sent.text for sent in bridge.sent] == ["hello"]


def test_a_refusing_bridge_body_is_not_shown_in_the_chat() -> None:
    with BridgeEmulator(token="t-1", fail_sends_with=400) as bridge:
        chat = _bridge_chat(bridge.base_url)
        with pytest.raises(PermanentSendError) as refused:
            BridgeTransport(chat.channel).send_text(chat, "hello", client_message_id="ID3")
    assert refused.value.title == "the bridge refused the message (HTTP 400)"


def test_bitrix24_urls_inside_the_network_are_refused_when_saved_and_when_called() -> None:
    business = factories.business()
    with pytest.raises(config.ConfigError, match="OUTBOUND_ALLOWED_HOSTS"):
        config.configure(business, webhook_url="https://169.254.169.254/rest/1/secretcode/")
    with pytest.raises(config.ConfigError, match="OUTBOUND_ALLOWED_HOSTS"):
        config.configure(business, portal_url="https://10.0.0.8")

    # A URL stored before this check existed: refused before any connection is tried.
    auth = WebhookAuth("https://10.255.255.1/rest/1/secretcode/")
    with Bitrix24Client(auth, bucket=LeakyBucket("b24:egress", 10, 10)) as client:
        with pytest.raises(PermanentError) as refused:
            client.call("profile")
    assert refused.value.code == "EGRESS_REFUSED"
