"""A manager's working day: search over message text, labels, canned replies and the contact
panel, through Django's test client on the real database (SQLite locally, PostgreSQL in CI).
Every feature is also checked across two businesses: A's manager never sees B's."""

from __future__ import annotations

import importlib
import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from inbox.conversations import search, status
from inbox.conversations.models import (
    CannedReply,
    Chat,
    Handoff,
    Label,
    Message,
)
from inbox.web.api_tokens import create_token
from inbox.web.contact import masked_phone
from integrations.bitrix24.models import Bitrix24Settings, CrmLink
from tests import factories
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db


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


def page(user: Any, url: str) -> str:
    response = client_for(user).get(url)
    assert response.status_code == 200
    return str(response.content.decode())


def hits(user: Any, q: str) -> list[int]:
    """The ids of the messages the list's search shows this user, in order."""
    html = page(user, f"/inbox/?q={q}")
    return [int(part.split('"', 1)[0]) for part in html.split('data-hit="')[1:]]


# --- search -----------------------------------------------------------------------------------


class _Editor:
    """What the search migration uses of a schema editor, inside the test's transaction (the
    SQLite schema editor cannot open there)."""

    connection = connection

    def execute(self, sql: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql)


class TestSearch:
    def test_finds_message_text_and_links_to_the_message(self, a: Tenant) -> None:
        found = factories.customer_message(a.chat, "Есть ли угловой диван в наличии?")

        html = page(a.manager, "/inbox/?q=угловой")

        assert f'href="/inbox/chat/{a.chat.pk}/?message={found.pk}#msg-{found.pk}"' in html
        assert "<mark>угловой</mark>" in html

    def test_names_and_phones_still_match(self, a: Tenant) -> None:
        html = page(a.manager, "/inbox/?q=Customer A")
        assert f'id="chat-row-{a.chat.pk}"' in html
        html = page(a.manager, f"/inbox/?q={a.chat.customer_phone[-6:]}")
        assert f'id="chat-row-{a.chat.pk}"' in html

    def test_every_word_must_match_as_a_prefix(self, a: Tenant) -> None:
        both = factories.customer_message(a.chat, "oak dining table, delivery tomorrow")
        factories.customer_message(a.chat, "oak chair only")

        assert hits(a.manager, "oak deliv") == [both.pk]

    def test_russian_morphology(self, a: Tenant) -> None:
        sofa = factories.customer_message(a.chat, "Хочу купить диван")
        sofas = factories.customer_message(a.chat, "Sofas and chairs")

        assert hits(a.manager, "диваны") == [sofa.pk]
        assert hits(a.manager, "sofa") == [sofas.pk]

    def test_word_forms_find_each_other_in_russian_and_english(self, a: Tenant) -> None:
        credit = factories.customer_message(a.chat, "Можно взять диван в рассрочку?")
        delivery = factories.customer_message(a.chat, "Сколько стоит доставка в Алматы?")
        english = factories.customer_message(a.chat, "Is delivery free on Sundays?")

        assert hits(a.manager, "рассрочка") == [credit.pk]
        assert hits(a.manager, "доставки") == [delivery.pk]
        assert hits(a.manager, "deliveries") == [english.pk]
        assert hits(a.manager, "рассроч") == [credit.pk]  # half a word still finds it
        html = page(a.manager, "/inbox/?q=рассрочка")
        assert "<mark>рассрочку</mark>" in html
        assert "<mark>delivery</mark>" in page(a.manager, "/inbox/?q=deliveries")

    def test_kazakh_words_and_skus_match_whole(self, a: Tenant) -> None:
        kazakh = factories.customer_message(a.chat, "Жеткізу қанша тұрады? Артикул AB4410")

        assert hits(a.manager, "жеткізу") == [kazakh.pk]
        assert hits(a.manager, "ab4410") == [kazakh.pk]
        assert hits(a.manager, "жеткізуге") == []  # no Kazakh stemmer: forms are not guessed

    def test_names_and_text_are_searched_across_every_status(self, a: Tenant) -> None:
        resolved = factories.chat(a.channel, customer_name="Dana Resolved")
        resolved_text = factories.customer_message(resolved, "рассрочку оформили, спасибо")
        snoozed = factories.chat(a.channel, customer_name="Dana Snoozed")
        status.resolve(resolved.pk, manager=a.manager)
        until = timezone.now() + timedelta(days=1)
        status.snooze(snoozed.pk, until=until, manager=a.manager)

        html = page(a.manager, "/inbox/?q=Dana")
        rows = html.split('id="chat-list-items"')[1]
        assert f'id="chat-row-{resolved.pk}"' in rows
        assert f'id="chat-row-{snoozed.pk}"' in rows
        assert "Resolved</span>" in rows
        assert "Snoozed until" in rows
        assert 'data-filter-status="any"' in html
        assert hits(a.manager, "рассрочка") == [resolved_text.pk]
        hit = page(a.manager, "/inbox/?q=рассрочка").split(f'id="hit-{resolved_text.pk}"')[1]
        assert "data-status-badge>Resolved<" in hit.split("</a>")[0]
        # Picking a status still narrows the search; without words the list stays on Open.
        assert hits(a.manager, "рассрочка&status=snoozed") == []
        assert f'id="chat-row-{resolved.pk}"' not in page(
            a.manager, "/inbox/?q=Dana&status=snoozed"
        )
        assert f'id="chat-row-{resolved.pk}"' not in page(a.manager, "/inbox/")

    def test_the_index_follows_edits_deletes_and_purges(self, a: Tenant) -> None:
        item = factories.customer_message(a.chat, "blue velvet armchair")
        assert hits(a.manager, "velvet") == [item.pk]

        Message.objects.filter(pk=item.pk).update(text="green leather armchair")
        assert hits(a.manager, "velvet") == []
        assert hits(a.manager, "leather") == [item.pk]

        Message.objects.filter(pk=item.pk).update(purged_at=item.created_at)
        assert hits(a.manager, "leather") == []
        Message.objects.filter(pk=item.pk).delete()
        assert hits(a.manager, "armchair") == []

    def test_the_migration_rebuilds_the_index_of_stored_messages(self, a: Tenant) -> None:
        migration = importlib.import_module("inbox.conversations.migrations.0016_search_stems")
        editor = _Editor()
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # no index is built with FK checks pending
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        migration.unstemmed(None, editor)  # the index as it was: whole words only
        stored = factories.customer_message(a.chat, "Next delivery tomorrow")
        if connection.vendor == "sqlite":  # PostgreSQL stems in the query; the index is speed
            assert hits(a.manager, "deliveries") == []
            migration.stemmed(None, editor)
        else:
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            migration.stemmed(None, editor)
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT indexdef FROM pg_indexes WHERE indexname = 'inbox_message_text_search'"
                )
                assert "'simple'::regconfig" in cursor.fetchone()[0]

        assert hits(a.manager, "deliveries") == [stored.pk]
        later = factories.customer_message(a.chat, "One more delivery")
        assert hits(a.manager, "deliveries") == [later.pk, stored.pk]

    def test_query_syntax_is_text_not_operators(self, a: Tenant) -> None:
        factories.customer_message(a.chat, "price AND NEAR stock")
        for q in ['"', "NEAR(", "a OR", "text:x", "-x", "*", "&|!", "'); DROP", "((", "\\"]:
            assert client_for(a.manager).get("/inbox/", {"q": q}).status_code == 200
        assert search.terms("text: NEAR(price*") == ["text", "near", "price"]

    def test_another_business_never_appears(self, a: Tenant, b: Tenant) -> None:
        factories.customer_message(b.chat, "secret sofa order of B")

        assert hits(a.manager, "secret") == [a.message.pk]
        assert "of B" not in page(a.manager, "/inbox/?q=secret")

    def test_a_manager_restricted_to_a_channel_sees_only_its_hits(self, a: Tenant) -> None:
        other_channel = factories.channel(a.business, name="Second number")
        other_chat = factories.chat(other_channel)
        hidden = factories.customer_message(other_chat, "secret of the second number")
        restricted = factories.manager(a.business, username="restricted")
        restricted.memberships.get().channels.set([a.channel])

        assert hits(restricted, "secret") == [a.message.pk]
        assert hidden.pk in hits(a.admin, "secret")
        assert client_for(restricted).get(f"/inbox/chat/{other_chat.pk}/").status_code == 404

    def test_other_filters_narrow_the_hits(self, a: Tenant) -> None:
        vip = Label.objects.create(business=a.business, name="VIP")
        second = factories.chat(a.channel)
        in_vip = factories.customer_message(second, "secret but labelled")
        vip.chats.add(second)

        assert hits(a.manager, f"secret&label={vip.pk}") == [in_vip.pk]


class TestJumpToMessage:
    def test_an_old_hit_opens_the_history_around_it_highlighted(self, a: Tenant) -> None:
        for n in range(30):
            factories.customer_message(a.chat, f"filler {n}")
        old = factories.customer_message(a.chat, "the old question about the wardrobe")
        for n in range(80):
            factories.customer_message(a.chat, f"later {n}")

        html = page(a.manager, f"/inbox/chat/{a.chat.pk}/?message={old.pk}")

        assert f'data-hit="{old.pk}"' in html
        assert f'id="msg-{old.pk}"' in html
        assert "filler 29" in html
        assert "Show earlier messages" in html
        assert "later 79" in html  # the newest is near enough to show too

    def test_a_hit_far_from_the_newest_says_newer_are_not_shown(self, a: Tenant) -> None:
        old = factories.customer_message(a.chat, "wardrobe")
        Message.objects.bulk_create(
            Message(
                chat=a.chat,
                channel=a.channel,
                direction=Message.Direction.INBOUND,
                author=Message.Author.CUSTOMER,
                text=f"later {n}",
            )
            for n in range(250)
        )

        html = page(a.manager, f"/inbox/chat/{a.chat.pk}/?message={old.pk}")

        assert f'id="msg-{old.pk}"' in html
        assert "Newer messages are not shown" in html

    def test_a_message_of_another_chat_is_ignored(self, a: Tenant, b: Tenant) -> None:
        html = page(a.manager, f"/inbox/chat/{a.chat.pk}/?message={b.message.pk}")

        assert "data-hit=" not in html.split('id="chat-list"')[1].split("search-hits")[0]
        assert "secret question of B" not in html


# --- labels -----------------------------------------------------------------------------------


class TestLabels:
    def test_a_label_added_shows_on_the_row_and_filters_the_list(self, a: Tenant) -> None:
        vip = Label.objects.create(business=a.business, name="VIP", colour="amber")
        unlabelled = factories.chat(a.channel, customer_name="Nobody special")
        client = client_for(a.manager)

        response = client.post(
            f"/inbox/chat/{a.chat.pk}/label/", {"label": vip.pk}, HTTP_HX_REQUEST="true"
        )

        assert response.status_code == 200
        assert f'data-label-chip="{vip.pk}"' in response.content.decode()
        listed = page(a.manager, f"/inbox/?label={vip.pk}")
        assert f'id="chat-row-{a.chat.pk}"' in listed
        assert 'class="chip chip-amber"' in listed
        assert f'id="chat-row-{unlabelled.pk}"' not in listed

        client.post(f"/inbox/chat/{a.chat.pk}/label/", {"remove": vip.pk})
        assert f'id="chat-row-{a.chat.pk}"' not in page(a.manager, f"/inbox/?label={vip.pk}")

    def test_labels_of_another_business_are_out_of_reach(self, a: Tenant, b: Tenant) -> None:
        theirs = Label.objects.create(business=b.business, name="B-only")
        theirs.chats.add(b.chat)
        Label.objects.create(business=a.business, name="A-own")
        client = client_for(a.manager)

        assert (
            client.post(f"/inbox/chat/{a.chat.pk}/label/", {"label": theirs.pk}).status_code == 404
        )
        assert (
            client.post(f"/inbox/chat/{b.chat.pk}/label/", {"label": theirs.pk}).status_code == 404
        )
        listed = page(a.manager, f"/inbox/?label={theirs.pk}")
        assert "B-only" not in listed
        assert "A-own" in listed
        assert f"chat-row-{b.chat.pk}" not in listed
        assert not a.chat.labels.exists()


# --- canned replies ---------------------------------------------------------------------------


class TestCannedReplies:
    def test_offered_filled_for_the_chat_and_the_manager(self, a: Tenant, b: Tenant) -> None:
        CannedReply.objects.create(
            business=a.business,
            title="Greeting",
            shortcut="hi",
            text="Hello {customer_name}, {manager_name} of {business_name} here. {unknown} {0}",
        )
        CannedReply.objects.create(business=b.business, title="B secret", text="nope")
        a.manager.first_name = "Anna"
        a.manager.save()

        data = json.loads(client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/canned/").content)

        assert data["replies"] == [
            {
                "id": CannedReply.objects.get(title="Greeting").pk,
                "title": "Greeting",
                "shortcut": "hi",
                "text": "Hello Customer A, Anna of Business A here. {unknown} {0}",
            }
        ]
        assert client_for(b.manager).get(f"/inbox/chat/{a.chat.pk}/canned/").status_code == 404

    def test_the_composer_asks_for_them(self, a: Tenant) -> None:
        html = page(a.manager, f"/inbox/chat/{a.chat.pk}/")
        assert f'data-canned-url="/inbox/chat/{a.chat.pk}/canned/"' in html

    def test_business_admins_manage_them_managers_cannot(self, a: Tenant, b: Tenant) -> None:
        url = "/inbox/settings/replies-labels/"
        assert client_for(a.manager).get(url).status_code == 403
        admin = client_for(a.admin)
        admin.post(
            url,
            {
                "action": "add_reply",
                "reply-title": "Price",
                "reply-shortcut": "price",
                "reply-text": "It costs {x}",
            },
        )
        admin.post(url, {"action": "add_label", "label-name": "Hot", "label-colour": "red"})
        admin.post(url, {"action": "privacy", "privacy-mask_phone_for_managers": "on"})

        assert CannedReply.objects.get(business=a.business).title == "Price"
        assert Label.objects.get(business=a.business).colour == "red"
        a.business.refresh_from_db()
        assert a.business.mask_phone_for_managers
        theirs = CannedReply.objects.create(business=b.business, title="B", text="b")
        assert admin.post(url, {"action": "delete_reply", "id": theirs.pk}).status_code == 404
        assert admin.get(f"{url}?business={b.business.pk}").status_code == 404
        assert "B" not in [r.title for r in CannedReply.objects.filter(business=a.business)]
        assert CannedReply.objects.filter(pk=theirs.pk).exists()


# --- contact panel ----------------------------------------------------------------------------


def panel(html: str) -> str:
    return html.split("data-contact-panel", 1)[1].split("</details>", 1)[0]


class TestContactPanel:
    def test_shows_name_phone_facts_and_earlier_chats(self, a: Tenant, b: Tenant) -> None:
        Handoff.objects.filter(pk=a.handoff.pk).update(
            facts={"name": "Aliya", "city": "Almaty", "items": [{"name": "Oak table", "qty": 2}]}
        )
        second = factories.channel(a.business, name="Shop number two")
        earlier = factories.chat(
            second, customer_key=a.chat.customer_key, customer_name="Aliya (old)"
        )
        factories.chat(b.channel, customer_key=a.chat.customer_key)  # B's: never shown

        shown = panel(page(a.manager, f"/inbox/chat/{a.chat.pk}/"))

        assert "Customer A" in shown
        assert f"+{a.chat.customer_phone}" in shown
        assert "Almaty" in shown
        assert "Oak table" in shown
        assert f'data-earlier-chat="{earlier.pk}"' in shown
        assert "Shop number two" in shown
        assert shown.count("data-earlier-chat=") == 1

    def test_a_restricted_manager_sees_only_their_channels_earlier_chats(self, a: Tenant) -> None:
        second = factories.channel(a.business, name="Shop number two")
        factories.chat(second, customer_key=a.chat.customer_key)
        restricted = factories.manager(a.business, username="restricted")
        restricted.memberships.get().channels.set([a.channel])

        assert "data-earlier-chat=" not in panel(page(restricted, f"/inbox/chat/{a.chat.pk}/"))

    def test_phone_masked_for_managers_when_the_business_asks(self, a: Tenant) -> None:
        a.business.mask_phone_for_managers = True
        a.business.save()
        full = f"+{a.chat.customer_phone}"

        as_manager = page(a.manager, f"/inbox/chat/{a.chat.pk}/")
        as_admin = page(a.admin, f"/inbox/chat/{a.chat.pk}/")

        assert full not in as_manager
        assert "data-masked" in panel(as_manager)
        assert full in panel(as_admin)
        assert a.chat.customer_phone not in page(a.manager, "/inbox/").split('id="chat-list"')[1]
        assert a.chat.customer_phone not in page(a.manager, f"/inbox/chat/{a.chat.pk}/history/")
        assert masked_phone("77010000005") == "+770••••••05"

    def test_the_api_masks_numbers_for_managers_too(self, a: Tenant) -> None:
        a.business.mask_phone_for_managers = True
        a.business.save()

        def phone(user: Any, path: str) -> str:
            _, token = create_token(user, "script")
            body = Client(HTTP_AUTHORIZATION=f"Bearer {token}").get(path).json()
            return str((body[0] if isinstance(body, list) else body)["customer_phone"])

        for path in ("/api/v1/chats", f"/api/v1/chats/{a.chat.pk}"):
            assert phone(a.manager, path) == masked_phone(a.chat.customer_phone), path
            assert phone(a.admin, path) == a.chat.customer_phone, path

    def test_shows_the_bitrix24_deal_link_and_stage(self, a: Tenant, b: Tenant) -> None:
        Bitrix24Settings.objects.create(
            business=a.business, webhook_url="https://shop.bitrix24.kz/rest/1/secretcode/"
        )
        CrmLink.objects.create(
            chat=a.chat,
            business=a.business,
            entity_type="deal",
            entity_id=42,
            stage_id="C1:WON",
            stage_name="Paid",
            stage_semantics="won",
        )

        shown = panel(page(a.manager, f"/inbox/chat/{a.chat.pk}/"))

        assert 'href="https://shop.bitrix24.kz/crm/deal/details/42/"' in shown
        assert "Paid" in shown
        assert "won" in shown
        assert "secretcode" not in shown
        assert "data-crm-card" not in panel(page(b.manager, f"/inbox/chat/{b.chat.pk}/"))

    def test_customer_text_is_escaped(self, a: Tenant) -> None:
        Chat.objects.filter(pk=a.chat.pk).update(customer_name="<img src=x onerror=alert(1)>")
        Handoff.objects.filter(pk=a.handoff.pk).update(facts={"note": "<script>x</script>"})

        shown = panel(page(a.manager, f"/inbox/chat/{a.chat.pk}/"))

        assert "<img src=x" not in shown
        assert "<script>x" not in shown
        assert "&lt;img src=x" in shown
