"""WhatsApp message templates: read from the Graph API (paged), their status changed by
webhook, sent with positional and named variables as Meta expects them (the emulator checks the
body like Meta does), and refused when they must not go."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from inbox.conversations import ingest, opt_outs, pending_replies, templates, window
from inbox.conversations.events import InboundEvent
from inbox.conversations.models import Channel, Chat, Message, MessageTemplate, OptOut, Owner
from inbox.conversations.transports import OutgoingTemplate, PermanentSendError
from inbox.platform.redis import get_redis
from inbox.site.asgi import application
from integrations.whatsapp import template_sync
from integrations.whatsapp.cloud_api import CloudApiTransport
from integrations.whatsapp.webhooks import routes
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator, sign
from tests.emulators.graph_templates import status_update_body

pytestmark = pytest.mark.django_db(transaction=True)

WABA = "102290129340398"
PNID = "106540352242777"
TOKEN = "tok-templates"
CUSTOMER = "77015550042"
SECRET = "test-app-secret"


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        settings.WHATSAPP_APP_SECRET = SECRET
        routes.clear()
        emulator.register_number(PNID, TOKEN, waba_id=WABA)
        book = emulator.templates
        book.add(WABA, "order_ready", body="Hello {{1}}, your order {{2}} is ready.")
        book.add(WABA, "answer_ready", parameter_format="NAMED",
                 body="Hi {{customer_name}}, we have an answer to your question: reply to see it.")  # fmt: skip
        book.add(WABA, "spring_sale", category="MARKETING", body="Spring sale: {{1}} off.")
        book.add(WABA, "old_promo", category="MARKETING", status="PAUSED", body="Old promo.")
        book.add(WABA, "privet", "ru", status="REJECTED", body="Привет!")
        yield emulator


@pytest.fixture
def channel(graph: GraphApiEmulator) -> Channel:
    return factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id=PNID, access_token=TOKEN, waba_id=WABA
    )


def _chat(channel: Channel, *, wrote_hours_ago: float = 25) -> Chat:
    written = timezone.now() - timedelta(hours=wrote_hours_ago)
    chat = factories.chat(
        channel, customer_key=CUSTOMER, customer_phone=CUSTOMER, customer_name="Aida",
        last_customer_at=written, window_closes_at=written + window.WINDOW,
    )  # fmt: skip
    factories.customer_message(chat, "Is the oak table in stock?", provider_timestamp=written)
    return chat


def _template(channel: Channel, name: str, language: str = "en_US") -> MessageTemplate:
    found = templates.find(channel.pk, name, language)
    assert found is not None
    return found


class TestSync:
    def test_every_page_is_read_into_the_store(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        result = template_sync.sync(channel)

        assert result.stored == 5
        assert len(graph.templates.list_requests) == 3  # two per page
        assert "after=" in graph.templates.list_requests[1]
        stored = {(t.name, t.language): t for t in MessageTemplate.objects.filter(channel=channel)}
        assert stored["order_ready", "en_US"].status == "APPROVED"
        assert stored["order_ready", "en_US"].category == "UTILITY"
        assert stored["spring_sale", "en_US"].category == "MARKETING"
        assert stored["old_promo", "en_US"].status == "PAUSED"
        assert stored["privet", "ru"].status == "REJECTED"
        assert stored["answer_ready", "en_US"].parameter_format == "NAMED"
        assert [t.name for t in templates.approved(channel)] == [
            "answer_ready", "order_ready", "spring_sale",
        ]  # fmt: skip

    def test_a_template_deleted_at_meta_leaves_the_store_and_a_changed_one_follows(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        template_sync.sync(channel)
        graph.templates._by_waba[WABA] = [
            t for t in graph.templates._by_waba[WABA] if t.name != "spring_sale"
        ]
        graph.templates.set_status(WABA, "privet", "ru", "APPROVED")

        result = template_sync.sync(channel)

        assert result.removed == 1
        assert templates.find(channel.pk, "spring_sale", "en_US") is None
        assert _template(channel, "privet", "ru").status == "APPROVED"

    def test_a_wrong_waba_id_is_said_in_words(self, graph: GraphApiEmulator) -> None:
        wrong = factories.channel(
            kind=Channel.Kind.CLOUD_API, phone_number_id="106540352249999", access_token=TOKEN,
            waba_id="999",
        )  # fmt: skip
        with pytest.raises(template_sync.SyncError, match="does not know the WABA ID 999"):
            template_sync.sync(wrong)

    def test_the_beat_task_syncs_every_channel_with_a_waba_id(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        factories.channel(kind=Channel.Kind.CLOUD_API)  # no WABA id: left alone
        assert template_sync.sync_all() == 1
        assert MessageTemplate.objects.filter(channel=channel).count() == 5


def _post_webhook(body: dict[str, Any]) -> int:
    raw = json.dumps(body).encode()

    async def post() -> int:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            response = await client.post(
                "/webhooks/whatsapp/", content=raw,
                headers={"Content-Type": "application/json",
                         "X-Hub-Signature-256": sign(SECRET, raw)},
            )  # fmt: skip
            return response.status_code

    return async_to_sync(post)()


def test_a_status_update_webhook_pauses_the_stored_template(
    graph: GraphApiEmulator, channel: Channel
) -> None:
    template_sync.sync(channel)
    paused = graph.templates.set_status(WABA, "order_ready", "en_US", "PAUSED")

    status = _post_webhook(status_update_body(WABA, paused, "PAUSED", "LOW_QUALITY"))

    assert status == 200
    row = _template(channel, "order_ready")
    assert (row.status, row.reason) == ("PAUSED", "LOW_QUALITY")
    assert "order_ready" not in [t.name for t in templates.approved(channel)]


class TestSend:
    def test_positional_variables_go_as_meta_wants_them_and_the_chat_shows_the_text(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        template_sync.sync(channel)
        chat = _chat(channel)
        manager = factories.manager(channel.business)

        outcome = templates.send(
            chat.pk, _template(channel, "order_ready"), {"1": "Aida", "2": "#42"}, manager=manager
        )

        assert outcome.sent
        (sent,) = graph.templates.sends
        assert sent.body["type"] == "template"
        assert sent.body["to"] == CUSTOMER
        assert sent.body["template"] == {
            "name": "order_ready",
            "language": {"code": "en_US"},
            "components": [
                {"type": "body", "parameters": [
                    {"type": "text", "text": "Aida"}, {"type": "text", "text": "#42"},
                ]},
            ],
        }  # fmt: skip
        message = Message.objects.get(pk=outcome.message_id)
        assert message.kind == Message.Kind.TEMPLATE
        assert message.text == "Hello Aida, your order #42 is ready." == sent.rendered
        assert message.status == Message.Status.SENT
        assert message.provider_message_id == graph.sent[-1].wamid  # its statuses apply
        assert Chat.objects.get(pk=chat.pk).owner == Owner.HUMAN

    def test_named_variables_carry_their_names(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        template_sync.sync(channel)
        chat = _chat(channel)

        outcome = templates.send(
            chat.pk, _template(channel, "answer_ready"), {"customer_name": "Aida"}, manager=None
        )

        assert outcome.sent
        assert graph.templates.sends[0].body["template"]["components"] == [
            {"type": "body",
             "parameters": [{"type": "text", "parameter_name": "customer_name", "text": "Aida"}]},
        ]  # fmt: skip
        assert Message.objects.get(pk=outcome.message_id).text.startswith("Hi Aida, we have")

    def test_a_paused_template_is_refused_and_nothing_is_sent(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        template_sync.sync(channel)
        chat = _chat(channel)

        with pytest.raises(templates.Refused, match="paused"):
            templates.send(chat.pk, _template(channel, "old_promo"), {}, manager=None)

        assert graph.sent == []
        assert not chat.messages.filter(kind=Message.Kind.TEMPLATE).exists()
        assert Chat.objects.get(pk=chat.pk).owner == Owner.BOT

    def test_an_opted_out_customer_gets_no_marketing_template(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        template_sync.sync(channel)
        chat = _chat(channel, wrote_hours_ago=1)  # window open: only marketing is proactive
        opt_outs.record(channel.business_id, CUSTOMER, OptOut.Source.KEYWORD)

        with pytest.raises(templates.Refused, match="opted out"):
            templates.send(chat.pk, _template(channel, "spring_sale"), {"1": "20%"}, manager=None)
        assert graph.sent == []

        outcome = templates.send(
            chat.pk, _template(channel, "order_ready"), {"1": "Aida", "2": "#7"}, manager=None
        )
        assert outcome.sent  # a utility answer inside the window is no unprompted send

    def test_an_empty_variable_is_refused(self, graph: GraphApiEmulator, channel: Channel) -> None:
        template_sync.sync(channel)
        chat = _chat(channel)
        with pytest.raises(templates.Refused, match=r"\{\{2\}\}"):
            templates.send(chat.pk, _template(channel, "order_ready"), {"1": "Aida"}, manager=None)
        assert graph.sent == []


class TestEmulatorChecksLikeMeta:
    def test_unknown_template_and_wrong_parameter_count_are_refused(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat = _chat(channel)
        transport = CloudApiTransport(channel)

        with pytest.raises(PermanentSendError) as unknown:
            transport.send_template(
                chat, OutgoingTemplate("nope", "en_US", []), client_message_id=""
            )
        one = [{"type": "body", "parameters": [{"type": "text", "text": "Aida"}]}]
        with pytest.raises(PermanentSendError) as count:
            transport.send_template(
                chat, OutgoingTemplate("order_ready", "en_US", one), client_message_id=""
            )

        assert unknown.value.code == "132001"
        assert count.value.code == "132000"
        assert graph.sent == []


class TestPendingReply:
    def _kept(self, graph: GraphApiEmulator, channel: Channel) -> tuple[Chat, Any]:
        template_sync.sync(channel)
        channel.reengage_template_name, channel.reengage_template_language = (
            "answer_ready", "en_US",
        )  # fmt: skip
        channel.save()
        chat = _chat(channel)
        manager = factories.manager(channel.business)
        Chat.objects.filter(pk=chat.pk).update(assigned_to=manager)
        kept = pending_replies.keep(chat.pk, "Yes, the oak table is in stock: 450 USD.",
                                    manager=manager)  # fmt: skip
        return chat, kept

    def _customer_writes(self, chat: Chat, wamid: str) -> None:
        ingest.accept(
            InboundEvent(
                channel_id=chat.channel_id, provider_message_id=wamid, chat_key=CUSTOMER,
                from_me=False, kind="text", text="Hi, what is the answer?", media=None,
                provider_ts=int(time.time()),
            )
        )  # fmt: skip

    def test_the_answer_waits_the_template_invites_and_the_return_sends_it(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, kept = self._kept(graph, channel)

        assert kept.reengaged
        assert [s.name for s in graph.templates.sends] == ["answer_ready"]
        assert "Hi Aida, we have an answer" in graph.templates.sends[0].rendered
        assert [m.type for m in graph.sent] == ["template"]  # the answer itself is not sent
        assert pending_replies.current(chat.pk) is not None

        self._customer_writes(chat, "wamid.back-1")

        queued = [
            json.loads(raw)["headers"]["task"] for raw in get_redis().lrange("default", 0, -1)
        ]
        assert queued == [pending_replies.SEND_TASK]  # after commit, not inside the ingest
        outcome = pending_replies.send_pending(chat.pk)  # what the task runs

        assert outcome is not None
        assert outcome.sent
        assert graph.sent[-1].type == "text"
        assert graph.sent[-1].text == "Yes, the oak table is in stock: 450 USD."
        assert pending_replies.current(chat.pk) is None

    def test_the_answer_is_dropped_with_a_note_when_another_manager_took_the_chat(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, _kept = self._kept(graph, channel)
        other = factories.manager(channel.business, username="boris")
        Chat.objects.filter(pk=chat.pk).update(assigned_to=other)

        self._customer_writes(chat, "wamid.back-2")
        outcome = pending_replies.send_pending(chat.pk)

        assert outcome is None
        assert [m.type for m in graph.sent] == ["template"]  # only the invitation
        note = chat.messages.get(direction=Message.Direction.INTERNAL)
        assert "was not sent" in note.text
        assert "boris" in note.text
        assert pending_replies.current(chat.pk) is None

    def test_nothing_goes_while_the_window_is_still_closed(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, _kept = self._kept(graph, channel)
        assert pending_replies.send_pending(chat.pk) is None
        assert pending_replies.current(chat.pk) is not None


def test_the_commands_create_a_channel_with_its_waba_and_sync_it(graph: GraphApiEmulator) -> None:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command(
        "create_channel", "--business", "Oak", "--kind", "cloud_api", "--phone-number-id", PNID,
        "--access-token", TOKEN, "--waba-id", WABA, stdout=out,
    )  # fmt: skip
    channel = Channel.objects.get(phone_number_id=PNID)
    assert channel.waba_id == WABA

    call_command("sync_templates", "--channel", str(channel.pk), stdout=out)

    assert f"channel {channel.pk}: 5 templates, 0 removed" in out.getvalue()
