"""The manager inbox pages and actions, through Django's test client on the real database."""

from __future__ import annotations

import re
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.utils import timezone

from assistant.models import PriceList
from inbox.conversations import ownership
from inbox.conversations.models import (
    Chat,
    ChatTransition,
    Handoff,
    HandoffReason,
    Membership,
    Message,
    Owner,
    Turn,
)
from inbox.web import dashboard
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    return tenant("B")


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def htmx(client: Client, url: str, data: dict[str, str] | None = None) -> Any:
    return client.post(url, data or {}, HTTP_HX_REQUEST="true")


class TestChatList:
    def test_login_is_required(self) -> None:
        response = Client().get("/inbox/")
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")

    def test_shows_own_chats_only_with_badge_preview_and_unread(self, a: Tenant, b: Tenant) -> None:
        Chat.objects.filter(pk=a.chat.pk).update(customer_messages=3)

        page = client_for(a.manager).get("/inbox/").content.decode()

        assert "Customer A" in page
        assert "secret question of A" in page
        assert 'title="Unread messages" data-unread>3<' in page
        assert "badge-bot" in page
        assert "Customer B" not in page
        assert "secret question of B" not in page

    def test_waiting_chats_come_first_oldest_first(self, a: Tenant) -> None:
        now = timezone.now()
        recent = factories.chat(a.channel, customer_name="Recent talker", last_message_at=now)
        old_wait = factories.chat(a.channel, customer_name="Waiting long", last_message_at=now)
        new_wait = factories.chat(a.channel, customer_name="Waiting short", last_message_at=now)
        Chat.objects.filter(pk=old_wait.pk).update(
            owner=Owner.PENDING_HUMAN, owner_changed_at=now - timedelta(hours=2)
        )
        Chat.objects.filter(pk=new_wait.pk).update(
            owner=Owner.PENDING_HUMAN, owner_changed_at=now - timedelta(minutes=5)
        )

        page = client_for(a.manager).get("/inbox/").content.decode()

        order = [page.index(name) for name in ("Waiting long", "Waiting short", "Recent talker")]
        assert order == sorted(order)
        assert "waiting 2" in page  # "waiting 2 hours"
        assert recent.pk

    def test_filters_by_state_channel_and_search(self, a: Tenant) -> None:
        other_channel = factories.channel(a.business, name="Second number")
        factories.chat(other_channel, customer_name="Dana", customer_phone="77019998877")
        waiting = factories.chat(a.channel, customer_name="Erlan")
        Chat.objects.filter(pk=waiting.pk).update(owner=Owner.PENDING_HUMAN)
        client = client_for(a.manager)

        by_state = client.get("/inbox/?state=pending_human").content.decode()
        by_channel = client.get(f"/inbox/?channel={other_channel.pk}").content.decode()
        by_phone = client.get("/inbox/?q=998877").content.decode()
        by_name = client.get("/inbox/?q=erl").content.decode()
        partial = client.get("/inbox/?q=dana", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="chat-list")

        assert "Erlan" in by_state
        assert "Dana" not in by_state
        assert "Dana" in by_channel
        assert "Erlan" not in by_channel
        assert "Dana" in by_phone
        assert "Erlan" not in by_phone
        assert "Erlan" in by_name
        assert "Dana" not in by_name
        assert partial.content.decode().lstrip().startswith('<div id="chat-list"')

    def test_long_list_pages_with_show_more_keeping_filters(self, a: Tenant, b: Tenant) -> None:
        now = timezone.now()
        Chat.objects.bulk_create(
            Chat(
                channel=a.channel,
                customer_key=f"7701{n:07d}",
                customer_name=f"Bulk {n:03d}",
                last_message_at=now - timedelta(minutes=n),
            )
            for n in range(1, dashboard.LIST_LIMIT + 6)
        )
        client = client_for(a.manager)

        first = client.get("/inbox/").content.decode()
        more = client.get(
            "/inbox/?offset=200", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="chat-list-more"
        ).content.decode()
        filtered = client.get("/inbox/?q=bulk").content.decode()

        assert first.count('class="chat-row ') == dashboard.LIST_LIMIT
        assert "Bulk 001" in first
        assert "Bulk 199" in first
        assert "Bulk 200" not in first
        assert "Show more chats" in first
        assert 'hx-swap-oob="beforeend:#chat-list-items"' in more
        # 205 bulk chats and the tenant's own chat, newest first: 200 on the first page.
        assert more.count('class="chat-row ') == 6
        assert "Bulk 200" in more
        assert "Bulk 205" in more
        assert "Bulk 199" not in more
        assert "Show more chats" not in more
        assert "Customer B" not in more
        assert "q=bulk&amp;offset=200" in filtered

    def test_manager_with_assigned_channels_sees_only_those(self, a: Tenant) -> None:
        second = factories.channel(a.business, name="Wholesale")
        factories.chat(second, customer_name="Wholesale buyer")
        Membership.objects.get(user=a.manager).channels.add(second)

        page = client_for(a.manager).get("/inbox/").content.decode()

        assert "Wholesale buyer" in page
        assert "Customer A" not in page


class TestChatView:
    def test_conversation_shows_who_wrote_each_message(self, a: Tenant) -> None:
        a.manager.first_name, a.manager.last_name = "Anna", "Petrova"
        a.manager.save()
        chat = a.chat
        for author, direction, text, user in [
            (Message.Author.BOT, Message.Direction.OUTBOUND, "Oak table is 120 000", None),
            (Message.Author.MANAGER, Message.Direction.OUTBOUND, "I will call you", a.manager),
            (Message.Author.PHONE, Message.Direction.OUTBOUND, "Sent from my phone", None),
        ]:
            Message.objects.create(
                chat=chat, channel=chat.channel, direction=direction, author=author,
                text=text, sent_by=user, from_me=True, status=Message.Status.DELIVERED,
            )  # fmt: skip

        page = client_for(a.manager).get(f"/inbox/chat/{chat.pk}/").content.decode()

        assert "Customer A" in page
        assert "Assistant" in page
        assert "Anna Petrova" in page
        assert "Manager from the phone" in page
        assert "Delivered" in page

    def test_voice_note_player_transcript_confidence_and_unsure_words(self, a: Tenant) -> None:
        # transcript_segments as assistant/speech/transcribe.py stores them (each word flagged `low`).
        voice = factories.customer_message(
            a.chat, "", kind=Message.Kind.VOICE, media_ref="media-1", media_file="media/v.ogg",
            transcript="I need two chairs", transcript_status=Message.TranscriptStatus.DONE,
            transcript_confidence=0.42,
            transcript_segments=[{"start": 0, "end": 2, "text": "I need two chairs", "confidence": 0.42,
                                  "words": [{"word": " I", "probability": 0.99, "low": False},
                                            {"word": " need", "probability": 0.97, "low": False},
                                            {"word": " two", "probability": 0.21, "low": True},
                                            {"word": " chairs", "probability": 0.8, "low": False}]}],
        )  # fmt: skip

        page = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/").content.decode()

        assert f'<audio controls preload="none" src="/inbox/media/{voice.pk}/"' in page
        assert "Transcript confidence 42%" in page
        assert "below this channel's threshold" in page
        assert '(0.21)"> two</mark>' in page
        assert "need</mark>" not in page

    def test_images_and_documents_link_to_the_media_view(self, a: Tenant) -> None:
        image = factories.customer_message(
            a.chat, "my room", kind=Message.Kind.IMAGE, media_ref="m2"
        )
        doc = factories.customer_message(
            a.chat, "", kind=Message.Kind.DOCUMENT, media_ref="m3", media_filename="invoice.pdf"
        )

        page = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/").content.decode()

        assert f'<img src="/inbox/media/{image.pk}/"' in page
        assert f'href="/inbox/media/{doc.pk}/"' in page
        assert "invoice.pdf" in page

    def test_failed_outbound_message_says_why_in_plain_words(self, a: Tenant) -> None:
        Message.objects.create(
            chat=a.chat, channel=a.channel, direction=Message.Direction.OUTBOUND,
            author=Message.Author.BOT, text="hello", from_me=True, status=Message.Status.FAILED,
            error_code="131047", error_title="Re-engagement message",
        )  # fmt: skip

        page = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/").content.decode()

        assert "Not delivered: More than 24 hours have passed since the customer last wrote" in page
        assert "(131047)" in page
        assert "only a template message can be sent now" in page  # instead of a Resend button

    def test_handoff_card_shows_reason_summary_and_facts(self, a: Tenant) -> None:
        ownership.request_human(a.chat.pk, reason="outside_knowledge_base")
        a.handoff.facts = {
            "name": "Aigerim", "city": "Almaty",
            "items": [{"name": "Oak table", "qty": 2.0}, {"name": "Chair", "qty": None}],
        }  # fmt: skip
        a.handoff.save()

        page = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/").content.decode()

        assert "Outside the price list" in page
        assert "summary of A" in page
        assert "Aigerim" in page
        assert "Almaty" in page
        assert "Oak table" in page
        assert "× 2<" in page

    def test_a_handoff_reason_reads_as_the_products_label(self, a: Tenant) -> None:
        Handoff.objects.create(
            chat=a.chat, reason=HandoffReason.ASKS_FOR_HUMAN, summary="wants a person"
        )
        ownership.request_human(a.chat.pk, reason=HandoffReason.ASKS_FOR_HUMAN)

        page = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/").content.decode()

        assert 'data-reason="asks_for_human">Customer asked for a person</span>' in page

    def test_a_business_own_reason_reads_as_its_words(self, a: Tenant) -> None:
        Handoff.objects.create(chat=a.chat, reason="wholesale_order", summary="wants a pallet")
        ownership.request_human(a.chat.pk, reason="wholesale_order")

        page = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/").content.decode()

        assert 'data-reason="wholesale_order">Wholesale order</span>' in page

    def test_no_handoff_card_once_the_chat_is_back_with_the_bot(self, a: Tenant) -> None:
        ownership.request_human(a.chat.pk, reason="outside_knowledge_base")
        ownership.release(a.chat.pk, manager=a.manager)

        page = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/").content.decode()

        assert "summary of A" not in page

    def test_running_turn_shows_the_preparing_indicator(self, a: Tenant) -> None:
        client = client_for(a.manager)
        assert "preparing a reply" not in client.get(f"/inbox/chat/{a.chat.pk}/").content.decode()
        Turn.objects.create(
            chat=a.chat, first_message_id=a.message.pk, last_message_id=a.message.pk,
            generated_at_version=a.chat.version,
        )  # fmt: skip
        assert "preparing a reply" in client.get(f"/inbox/chat/{a.chat.pk}/").content.decode()

    def test_customer_text_is_escaped(self, a: Tenant) -> None:
        factories.customer_message(a.chat, "<script>alert('x')</script><b>bold</b>")
        Chat.objects.filter(pk=a.chat.pk).update(customer_name="<img src=x onerror=alert(1)>")

        client = client_for(a.manager)
        for url in ("/inbox/", f"/inbox/chat/{a.chat.pk}/"):
            page = client.get(url).content.decode()
            assert "<script>alert" not in page
            assert "<img src=x" not in page
            # The row's preview and the message are Jinja2's (markupsafe writes ' as &#39;).
            assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in page
            assert "&lt;img src=x onerror=alert(1)&gt;" in page

    def test_opening_a_chat_clears_its_unread_count_for_that_manager(self, a: Tenant) -> None:
        Chat.objects.filter(pk=a.chat.pk).update(customer_messages=4)
        client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/")
        page = client_for(a.manager).get("/inbox/").content.decode()
        assert 'title="Unread messages" data-unread hidden>0<' in page

    def test_ownership_history_lists_the_audit_rows(self, a: Tenant) -> None:
        ownership.request_human(a.chat.pk, reason="outside_knowledge_base")
        ownership.take_over(a.chat.pk, manager=a.manager)

        page = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/history/").content.decode()

        # Each cause and reason in its enum's words (OwnershipCause, HandoffReason).
        assert "Manager took over" in page
        assert "manager-a" in page
        assert "Assistant handed over · Outside the price list" in page

    def test_earlier_messages_load_on_demand(self, a: Tenant) -> None:
        for n in range(60):
            factories.customer_message(a.chat, f"line {n:02d}")
        client = client_for(a.manager)
        page = client.get(f"/inbox/chat/{a.chat.pk}/").content.decode()
        assert "line 59" in page
        assert "line 05" not in page
        first_shown = Message.objects.filter(chat=a.chat).order_by("-pk")[49].pk

        earlier = client.get(f"/inbox/chat/{a.chat.pk}/earlier/?before={first_shown}")

        assert "line 05" in earlier.content.decode()


class TestActions:
    def test_take_over_moves_to_human_and_assigns(self, a: Tenant) -> None:
        response = htmx(client_for(a.manager), f"/inbox/chat/{a.chat.pk}/take-over/")

        chat = Chat.objects.get(pk=a.chat.pk)
        assert response.status_code == 200
        assert chat.owner == Owner.HUMAN
        assert chat.assigned_to_id == a.manager.pk
        assert "Release to bot" in response.content.decode()

    def test_second_manager_taking_over_sees_the_current_state(self, a: Tenant) -> None:
        colleague = factories.manager(a.business, username="colleague")
        htmx(client_for(a.manager), f"/inbox/chat/{a.chat.pk}/take-over/")

        response = htmx(client_for(colleague), f"/inbox/chat/{a.chat.pk}/take-over/")

        assert response.status_code == 200
        assert "manager-a took this chat first" in response.content.decode()
        assert ChatTransition.objects.filter(chat=a.chat).count() == 1

    def test_two_managers_clicking_at_once_make_one_transition(self, a: Tenant) -> None:
        colleague = factories.manager(a.business, username="colleague")
        clients = [client_for(a.manager), client_for(colleague)]
        statuses: list[int] = []
        barrier = threading.Barrier(2)

        def click(client: Client) -> None:
            barrier.wait()
            try:
                statuses.append(htmx(client, f"/inbox/chat/{a.chat.pk}/take-over/").status_code)
            finally:
                connection.close()

        threads = [threading.Thread(target=click, args=(c,)) for c in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert statuses == [200, 200]
        assert ChatTransition.objects.filter(chat=a.chat, to_owner=Owner.HUMAN).count() == 1

    def test_release_and_release_again(self, a: Tenant) -> None:
        ownership.take_over(a.chat.pk, manager=a.manager)
        client = client_for(a.manager)

        first = htmx(client, f"/inbox/chat/{a.chat.pk}/release/")
        second = htmx(client, f"/inbox/chat/{a.chat.pk}/release/")

        assert Chat.objects.get(pk=a.chat.pk).owner == Owner.BOT
        assert first.status_code == second.status_code == 200
        assert "The bot already has this chat." in second.content.decode()

    def test_assign_only_to_a_manager_of_the_business(self, a: Tenant, b: Tenant) -> None:
        colleague = factories.manager(a.business, username="colleague")
        client = client_for(a.manager)

        htmx(client, f"/inbox/chat/{a.chat.pk}/assign/", {"assignee": str(colleague.pk)})
        assert Chat.objects.get(pk=a.chat.pk).assigned_to_id == colleague.pk

        refused = htmx(client, f"/inbox/chat/{a.chat.pk}/assign/", {"assignee": str(b.manager.pk)})
        assert "cannot work on this chat" in refused.content.decode()
        assert Chat.objects.get(pk=a.chat.pk).assigned_to_id == colleague.pk

    def test_reply_is_sent_once_even_when_submitted_twice(self, a: Tenant) -> None:
        client = client_for(a.manager)
        form = {"text": "We deliver tomorrow", "key": "k-123"}

        first = htmx(client, f"/inbox/chat/{a.chat.pk}/reply/", form)
        second = htmx(client, f"/inbox/chat/{a.chat.pk}/reply/", form)

        sent = Message.objects.filter(chat=a.chat, author=Message.Author.MANAGER)
        assert [m.text for m in sent] == ["We deliver tomorrow"]
        assert sent[0].sent_by_id == a.manager.pk
        assert Chat.objects.get(pk=a.chat.pk).owner == Owner.HUMAN
        assert first.status_code == second.status_code == 200
        assert "already sent" in second.content.decode()

    def test_empty_reply_is_refused_with_a_message(self, a: Tenant) -> None:
        response = htmx(client_for(a.manager), f"/inbox/chat/{a.chat.pk}/reply/", {"text": "  "})
        assert "Write a message first." in response.content.decode()
        assert Chat.objects.get(pk=a.chat.pk).owner == Owner.BOT

    def test_failed_send_is_shown_to_the_manager(self, a: Tenant, settings: Any) -> None:
        with GraphApiEmulator() as graph:
            settings.WHATSAPP_GRAPH_URL = graph.graph_url
            channel = factories.channel(
                a.business, kind="cloud_api", phone_number_id="106540352242000", access_token="t"
            )
            graph.register_number("106540352242000", "t")
            chat = factories.chat(channel, customer_phone="77011112233")
            graph.fail_next_sends(131030, times=5)

            response = htmx(
                client_for(a.manager),
                f"/inbox/chat/{chat.pk}/reply/",
                {"text": "Hello", "key": "x"},
            )

        body = response.content.decode()
        assert (
            "Not delivered: The recipient is not in the allowed list of this test number." in body
        )
        assert Message.objects.get(chat=chat, author="manager").status == Message.Status.FAILED

    def test_internal_note_is_stored_and_not_sent(self, a: Tenant) -> None:
        htmx(client_for(a.manager), f"/inbox/chat/{a.chat.pk}/note/", {"text": "VIP", "key": "n"})

        note = Message.objects.get(chat=a.chat, direction=Message.Direction.INTERNAL)
        assert note.text == "VIP"
        page = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/").content.decode()
        assert "Internal note · manager-a" in page

    def test_actions_without_htmx_redirect_back_to_the_chat(self, a: Tenant) -> None:
        response = client_for(a.manager).post(f"/inbox/chat/{a.chat.pk}/take-over/")
        assert response.status_code == 302
        assert response["Location"] == f"/inbox/chat/{a.chat.pk}/"

    def test_forms_need_a_csrf_token(self, a: Tenant) -> None:
        client = Client(enforce_csrf_checks=True)
        client.force_login(a.manager)

        refused = client.post(f"/inbox/chat/{a.chat.pk}/take-over/")
        page = client.get(f"/inbox/chat/{a.chat.pk}/")
        token = page.cookies["csrftoken"].value
        accepted = client.post(f"/inbox/chat/{a.chat.pk}/take-over/", HTTP_X_CSRFTOKEN=token)

        assert refused.status_code == 403
        assert accepted.status_code == 302
        assert 'hx-headers=\'{"X-CSRFToken": "' in page.content.decode()


class TestAdminPages:
    def test_managers_cannot_open_them(self, a: Tenant) -> None:
        client = client_for(a.manager)
        for url in ("/inbox/settings/channels/", f"/inbox/settings/channels/{a.channel.pk}/",
                    "/inbox/review/"):  # fmt: skip
            assert client.get(url).status_code == 403

    def test_channel_list_shows_health_per_channel(self, a: Tenant) -> None:
        silent = factories.channel(a.business, name="Old phone", silent_alert_minutes=60)
        from inbox.conversations.models import Channel

        Channel.objects.filter(pk=silent.pk).update(
            last_event_at=timezone.now() - timedelta(hours=5)
        )
        Channel.objects.filter(pk=a.channel.pk).update(last_event_at=timezone.now())

        page = client_for(a.admin).get("/inbox/settings/channels/").content.decode()

        assert "Last event 0" in page
        assert "Silent for 5" in page
        assert "60-minute window" in page

    def test_edit_saves_timing_and_working_hours_and_keeps_secrets_write_only(
        self, a: Tenant
    ) -> None:
        channel = factories.channel(
            a.business,
            kind="cloud_api",
            phone_number_id="10654035229999",
            access_token="tok-secret-123456",
        )
        client = client_for(a.admin)
        form = client.get(f"/inbox/settings/channels/{channel.pk}/").content.decode()
        assert "tok-secret-123456" not in form
        assert "Set (••••••••3456)" in form

        data = {
            "name": "Main number", "is_active": "on", "language": "en",
            "phone_number_id": "10654035229999", "display_phone_number": "+7 700 000",
            "access_token": "", "debounce_seconds": "6", "idle_release_hours": "2",
            "late_answer_cutoff_minutes": "45", "voice_confidence_threshold": "0.7",
            "silent_alert_minutes": "90", "wh_mon_from": "09:00", "wh_mon_to": "18:00",
        }  # fmt: skip
        response = client.post(f"/inbox/settings/channels/{channel.pk}/", data)

        assert response.status_code == 302
        channel.refresh_from_db()
        assert channel.access_token == "tok-secret-123456"
        assert (channel.debounce_seconds, channel.idle_release_hours) == (6, 2)
        assert channel.working_hours == {"mon": ["09:00", "18:00"]}
        assert channel.voice_confidence_threshold == 0.7

        data.update(access_token="new-token-abcdef", wh_tue_from="10:00")
        bad = client.post(f"/inbox/settings/channels/{channel.pk}/", data)
        assert "give both times" in bad.content.decode()
        data.pop("wh_tue_from")
        client.post(f"/inbox/settings/channels/{channel.pk}/", data)
        channel.refresh_from_db()
        assert channel.access_token == "new-token-abcdef"

    def test_a_bridge_url_inside_the_network_is_refused_on_save(self, a: Tenant) -> None:
        """A business admin could point the bridge at an internal service: replies (with the
        bridge token) went there and a 4xx body came back into the chat."""
        channel = factories.channel(a.business, kind="bridge", bridge_token="bt-1")
        before = channel.bridge_url
        data = {
            "name": "Bridge", "is_active": "on", "language": "en",
            "bridge_url": "http://169.254.169.254/latest/", "bridge_token": "",
            "debounce_seconds": "6", "idle_release_hours": "2", "late_answer_cutoff_minutes": "45",
            "voice_confidence_threshold": "0.7", "silent_alert_minutes": "90",
        }  # fmt: skip
        refused = client_for(a.admin).post(f"/inbox/settings/channels/{channel.pk}/", data)

        assert refused.status_code == 200
        assert "OUTBOUND_ALLOWED_HOSTS" in refused.content.decode()
        channel.refresh_from_db()
        assert channel.bridge_url == before

    def test_review_lists_knowledge_gaps_and_guardrail_blocks(self, a: Tenant) -> None:
        Handoff.objects.create(
            chat=a.chat, reason=HandoffReason.GUARDRAIL, summary="asked for a discount",
            details={"blocked_reply": "Sure, 20% off!", "findings": ["discount 20% not in the price list"]},
        )  # fmt: skip
        Handoff.objects.create(
            chat=a.chat, reason=HandoffReason.ASKS_FOR_HUMAN, summary="wants a person"
        )

        page = client_for(a.admin).get("/inbox/review/").content.decode()

        assert "summary of A" in page
        assert "Sure, 20% off!" in page
        assert "discount 20% not in the price list" in page
        assert "wants a person" not in page
        only_guardrail = client_for(a.admin).get("/inbox/review/?reason=guardrail").content.decode()
        assert "summary of A" not in only_guardrail


def previewed(client: Client, uploaded: Any) -> str:
    """The price-list page once the worker has read the upload (the page polls the same way)."""
    from tests.processes import wait_for

    assert uploaded.status_code == 302, uploaded.content
    assert "?upload=" in uploaded["Location"]

    def ready() -> str | None:
        page = client.get(uploaded["Location"]).content.decode()
        return None if 'data-upload-state="parsing"' in page else page

    return wait_for(ready, timeout=60, interval=0.2, message="the worker's preview")


@pytest.mark.usefixtures("celery_worker")
class TestAssistantPages:
    def test_price_list_preview_shows_row_errors_and_writes_nothing(self, a: Tenant) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile

        from assistant.models import PriceListVersion

        client = client_for(a.admin)
        bad = SimpleUploadedFile("prices.csv", b"sku,name,price\nT1,Oak table,abc\n")

        page = previewed(
            client,
            client.post(
                "/inbox/settings/price-list/", {"target": f"b{a.business.pk}", "file": bad}
            ),
        )

        assert "line 2" in page
        assert "Apply this price list" not in page
        assert not PriceListVersion.objects.exists()

    def test_price_list_upload_preview_then_apply(self, a: Tenant, b: Tenant) -> None:
        import re

        from django.core.files.uploadedfile import SimpleUploadedFile

        from assistant.models import PriceList

        client = client_for(a.admin)
        good = SimpleUploadedFile(
            "prices.csv", b"sku,name,price,currency\nT1,Oak table,120000,KZT\nC1,Chair,15000,KZT\n"
        )
        foreign = client.post(
            "/inbox/settings/price-list/", {"target": f"c{b.channel.pk}", "file": good}
        )
        assert foreign.status_code in (200, 404)
        assert not PriceList.objects.filter(business=b.business).exists()

        good.seek(0)
        preview = previewed(
            client,
            client.post(
                "/inbox/settings/price-list/", {"target": f"c{a.channel.pk}", "file": good}
            ),
        )
        assert "Oak table" in preview
        assert "override for Channel A" in preview
        token = re.search(r'name="token" value="([^"]+)"', preview)
        assert token

        applied = client.post("/inbox/settings/price-list/", {"token": token.group(1)})

        assert applied.status_code == 302
        price_list = PriceList.objects.get(business=a.business, channel=a.channel)
        assert price_list.current_version is not None
        assert price_list.current_version.item_count == 2
        assert "v1" in client.get("/inbox/settings/price-list/").content.decode()

    def test_price_list_apply_after_losing_the_admin_role_is_refused(
        self, a: Tenant, b: Tenant
    ) -> None:
        both = a.admin
        Membership.objects.create(user=both, business=b.business, role=Membership.Role.ADMIN)
        client = client_for(both)
        good = SimpleUploadedFile("prices.csv", b"name,price,currency\nOak table,120000,KZT\n")
        preview = previewed(
            client,
            client.post(
                "/inbox/settings/price-list/", {"target": f"c{b.channel.pk}", "file": good}
            ),
        )
        token = re.search(r'name="token" value="([^"]+)"', preview)
        assert token

        Membership.objects.filter(user=both, business=b.business).delete()
        applied = client.post("/inbox/settings/price-list/", {"token": token.group(1)})

        assert applied.status_code == 404
        assert not PriceList.objects.filter(business=b.business).exists()

    def test_assistant_settings_reasons_rules_and_promises(self, a: Tenant) -> None:
        from assistant.knowledge.effective import assistant_settings

        client = client_for(a.admin)
        assert "Handoff reasons" in client.get("/inbox/settings/assistant/").content.decode()

        response = client.post(
            "/inbox/settings/assistant/",
            {
                "business_rules": "Address customers formally.",
                "reasons_text": "wholesale: orders of more than 50 items\nangry customer: complaints",
                "promises_text": "free delivery\n\nlifetime warranty",
            },
        )

        assert response.status_code == 302
        saved = assistant_settings(a.business.pk)
        assert saved.business_rules == "Address customers formally."
        assert saved.reason_codes() == ["wholesale", "angry_customer"]
        assert saved.promises() == ["free delivery", "lifetime warranty"]
        assert client_for(a.manager).get("/inbox/settings/assistant/").status_code == 403
