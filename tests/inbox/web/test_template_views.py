"""Past the window, where managers meet templates: the picker in the locked composer (prefilled,
previewed, sent), the answer kept for the customer's return with its Cancel, the JSON API's
templates, template send and pending reply, the 409 that names them, the channel page's sync,
and another business's chat staying a 404."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from inbox.conversations import pending_replies, window
from inbox.conversations.models import (
    Channel,
    Chat,
    Membership,
    Message,
    MessageTemplate,
    Owner,
    Turn,
)
from inbox.web.api_tokens import create_token
from integrations.whatsapp import template_sync
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db(transaction=True)

WABA = "102290129340111"
PNID = "106540352242666"
TOKEN = "tok-picker"
CUSTOMER = "77015550077"


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        emulator.register_number(PNID, TOKEN, waba_id=WABA)
        emulator.templates.add(WABA, "order_ready", body="Hello {{1}}, your order {{2}} is ready.")
        emulator.templates.add(
            WABA, "old_promo", category="MARKETING", status="PAUSED", body="Old."
        )
        yield emulator


def _closed_chat(a: Tenant) -> Chat:
    channel = factories.channel(
        a.business, kind=Channel.Kind.CLOUD_API, phone_number_id=PNID, access_token=TOKEN,
        waba_id=WABA,
    )  # fmt: skip
    template_sync.sync(channel)
    written = timezone.now() - timedelta(hours=25)
    chat = factories.chat(
        channel, customer_key=CUSTOMER, customer_phone=CUSTOMER, customer_name="Aida",
        last_customer_at=written, window_closes_at=written + window.WINDOW,
    )  # fmt: skip
    factories.customer_message(chat, "Is my order ready?", provider_timestamp=written)
    return chat


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _api(user: Any, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    _, token = create_token(user, "tests")
    call = getattr(Client(), method)
    kwargs: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is not None:
        kwargs.update(data=body, content_type="application/json")
    return call(f"/api/v1{path}", **kwargs)


class TestInbox:
    def test_the_locked_composer_leads_to_the_picker_which_prefills_previews_and_sends(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _closed_chat(a)
        client = _client(a.manager)

        page = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
        assert 'data-action="choose-template"' in page
        picker = client.get(f"/inbox/chat/{chat.pk}/templates/").content.decode()
        assert "order_ready · en_US · Utility" in picker
        assert "old_promo" not in picker  # paused: not offered
        assert 'name="var_1" value="Aida"' in picker  # the customer's name
        preview = client.get(
            f"/inbox/chat/{chat.pk}/templates/", {"var_1": "Aida", "var_2": "<b>#42</b>"}
        ).content.decode()
        assert "Hello Aida, your order &lt;b&gt;#42&lt;/b&gt; is ready." in preview

        sent = client.post(
            f"/inbox/chat/{chat.pk}/template/",
            {"name": "order_ready", "language": "en_US", "var_1": "Aida", "var_2": "#42",
             "key": "t1"},
            HTTP_HX_REQUEST="true",
        ).content.decode()  # fmt: skip

        assert "Template sent." in sent
        page = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
        assert "Template order_ready" in page  # the message says what it was
        assert graph.templates.sends[0].rendered == "Hello Aida, your order #42 is ready."
        chat = Chat.objects.get(pk=chat.pk)
        assert (chat.owner, chat.assigned_to_id) == (Owner.HUMAN, a.manager.pk)

    def test_an_answer_is_kept_shown_with_cancel_and_taken_back(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _closed_chat(a)
        client = _client(a.manager)

        kept = client.post(
            f"/inbox/chat/{chat.pk}/pending/", {"text": "Ready on Friday <3"},
            HTTP_HX_REQUEST="true",
        ).content.decode()  # fmt: skip

        assert "Will be sent when the customer replies" in kept
        assert "Ready on Friday &lt;3" in kept
        assert "No re-engagement template is chosen" in kept
        assert graph.sent == []
        page = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
        assert 'data-action="cancel-pending"' in page

        client.post(f"/inbox/chat/{chat.pk}/pending/cancel/", HTTP_HX_REQUEST="true")
        assert pending_replies.current(chat.pk) is None

    def test_another_business_cannot_open_the_picker_or_send(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _closed_chat(a)
        other = tenant("B")
        client = _client(other.manager)

        assert client.get(f"/inbox/chat/{chat.pk}/templates/").status_code == 404
        response = client.post(
            f"/inbox/chat/{chat.pk}/template/",
            {"name": "order_ready", "language": "en_US", "var_1": "x", "var_2": "y"},
        )  # fmt: skip
        assert response.status_code == 404
        assert graph.sent == []


class TestApi:
    def test_templates_are_listed_with_their_variables_and_prefill(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _closed_chat(a)

        body = _api(a.manager, "get", f"/chats/{chat.pk}/templates").json()

        assert body == [{
            "name": "order_ready", "language": "en_US", "category": "UTILITY",
            "text": "Hello {{1}}, your order {{2}} is ready.", "variables": ["1", "2"],
            "prefill": {"1": "Aida", "2": ""},
        }]  # fmt: skip

    def test_a_named_quote_variable_is_prefilled_with_the_bots_last_quote(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        graph.templates.add(WABA, "quote_ready", parameter_format="NAMED",
                            body="Hi {{customer_name}}, your quote: {{quote}}")  # fmt: skip
        chat = _closed_chat(a)
        reply = Message.objects.create(
            chat=chat, channel=chat.channel, direction="out", author="bot", sent_by_bot=True,
            text="2 oak tables: 900 USD.", status="read",
        )  # fmt: skip
        Turn.objects.create(
            chat=chat, first_message_id=1, last_message_id=1, generated_at_version=1,
            outcome=Turn.Outcome.ANSWERED, reply_message=reply,
            decision={"explained": {"lines": [{"item": "oak table", "qty": 2}]}},
        )  # fmt: skip

        body = _api(a.manager, "get", f"/chats/{chat.pk}/templates").json()

        (quote,) = [t for t in body if t["name"] == "quote_ready"]
        assert quote["prefill"] == {"customer_name": "Aida", "quote": "2 oak tables: 900 USD."}

    def test_the_409_names_the_template_endpoint_and_sending_there_works(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _closed_chat(a)

        refused = _api(a.manager, "post", f"/chats/{chat.pk}/reply", {"text": "Ready!"})
        assert refused.status_code == 409
        assert refused.json()["send_template"] == f"/api/v1/chats/{chat.pk}/template"
        assert refused.json()["templates"] == f"/api/v1/chats/{chat.pk}/templates"

        sent = _api(a.manager, "post", f"/chats/{chat.pk}/template",
                    {"name": "order_ready", "language": "en_US",
                     "variables": {"1": "Aida", "2": "#9"}})  # fmt: skip

        assert sent.status_code == 200
        message = Message.objects.get(pk=sent.json()["message_id"])
        assert message.text == "Hello Aida, your order #9 is ready."
        assert message.status == Message.Status.SENT

    def test_a_paused_template_is_a_409_and_another_business_a_404(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _closed_chat(a)

        paused = _api(a.manager, "post", f"/chats/{chat.pk}/template",
                      {"name": "old_promo", "language": "en_US"})  # fmt: skip
        other = _api(tenant("B").manager, "post", f"/chats/{chat.pk}/template",
                     {"name": "order_ready", "language": "en_US",
                      "variables": {"1": "x", "2": "y"}})  # fmt: skip
        listed = _api(tenant("C").manager, "get", f"/chats/{chat.pk}/templates")

        assert paused.status_code == 409
        assert "paused" in paused.json()["detail"]
        assert other.status_code == 404
        assert listed.status_code == 404
        assert graph.sent == []

    def test_a_pending_reply_is_kept_through_the_api(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        chat = _closed_chat(a)

        kept = _api(a.manager, "post", f"/chats/{chat.pk}/pending-reply", {"text": "Friday."})

        assert kept.status_code == 200
        assert pending_replies.current(chat.pk).text == "Friday."  # type: ignore[union-attr]
        stranger = tenant("B").manager
        assert _api(stranger, "delete", f"/chats/{chat.pk}/pending-reply").status_code == 404
        assert pending_replies.current(chat.pk) is not None
        assert _api(a.manager, "delete", f"/chats/{chat.pk}/pending-reply").status_code == 200
        assert pending_replies.current(chat.pk) is None


class TestChannelPage:
    def test_the_admin_syncs_and_chooses_the_reengagement_template(
        self, a: Tenant, graph: GraphApiEmulator
    ) -> None:
        channel = factories.channel(
            a.business, kind=Channel.Kind.CLOUD_API, phone_number_id=PNID, access_token=TOKEN,
            waba_id=WABA,
        )  # fmt: skip
        client = _client(a.admin)

        client.post(f"/inbox/settings/channels/{channel.pk}/templates/sync/")
        page = client.get(f"/inbox/settings/channels/{channel.pk}/").content.decode()
        assert 'data-template="order_ready"' in page
        assert 'name="waba_id"' in page
        template = MessageTemplate.objects.get(channel=channel, name="order_ready")
        client.post(
            f"/inbox/settings/channels/{channel.pk}/templates/reengage/",
            {"template": str(template.pk)},
        )
        channel.refresh_from_db()
        assert (channel.reengage_template_name, channel.reengage_template_language) == (
            "order_ready", "en_US",
        )  # fmt: skip

    def test_a_manager_cannot_sync(self, a: Tenant, graph: GraphApiEmulator) -> None:
        channel = factories.channel(
            a.business, kind=Channel.Kind.CLOUD_API, phone_number_id=PNID, access_token=TOKEN,
            waba_id=WABA,
        )  # fmt: skip
        assert Membership.objects.get(user=a.manager).role == Membership.Role.MANAGER
        response = _client(a.manager).post(f"/inbox/settings/channels/{channel.pk}/templates/sync/")
        assert response.status_code in (403, 404)
        assert not MessageTemplate.objects.filter(channel=channel).exists()
