"""The inbox in each member's language: English by default, Russian or Kazakh where the member or
the business chose it (inbox/web/local_language.py, locale/, inbox/site/locale_build.py)."""

from __future__ import annotations

import gettext
import io
import re
from pathlib import Path

import pytest
from django.core import mail
from django.core.management import call_command
from django.test import Client

from inbox.conversations.models import (
    Channel,
    Chat,
    Handoff,
    HandoffReason,
    Membership,
    Message,
)
from inbox.site import locale_build
from inbox.web import fragments
from inbox.web.api_tokens import create_token
from tests import factories

pytestmark = pytest.mark.django_db

LANGUAGES = ("ru", "kk")
# The templates of the inbox page (and the fragments it includes and pushes): every string
# marked in them must be translated in both catalogues.
INBOX_PAGE = [
    "templates/base.html",
    *sorted(
        str(p.relative_to(locale_build.ROOT))
        for p in (locale_build.ROOT / "templates/inbox").glob("_*.html")
    ),
    "templates/inbox/inbox.html",
    "templates/inbox/reports/page.html",
    "templates/registration/login.html",
    *sorted(
        str(p.relative_to(locale_build.ROOT))
        for p in (locale_build.ROOT / "jinja_templates").rglob("*.html")
    ),
]


def _po(language: str) -> Path:
    return locale_build.LOCALE_DIR / language / "LC_MESSAGES" / "django.po"


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_catalogue_compiles_and_translates_the_inbox_page(
    language: str, tmp_path: Path
) -> None:
    catalogue = locale_build.parse(_po(language).read_text(encoding="utf-8"))
    mo = tmp_path / "django.mo"
    mo.write_bytes(locale_build.mo_bytes(catalogue))
    compiled = gettext.GNUTranslations(mo.open("rb"))
    assert compiled.info()["language"] == language
    untranslated = []
    for path in INBOX_PAGE:
        text = (locale_build.ROOT / path).read_text(encoding="utf-8")
        for context, msgid in locale_build.template_strings(text):
            key = f"{context}\x04{msgid}" if context else msgid
            if not catalogue.get(key, "").strip():
                untranslated.append(f"{path}: {msgid}")
    assert untranslated == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_catalogue_holds_every_marked_string(language: str) -> None:
    """A string marked since the last `--extract` would show in English: run it."""
    catalogue = locale_build.parse(_po(language).read_text(encoding="utf-8"))
    missing = [
        msgid
        for (context, msgid) in locale_build.extract()
        if (f"{context}\x04{msgid}" if context else msgid) not in catalogue
    ]
    assert missing == []


def test_placeholders_survive_translation() -> None:
    """A translation that drops or renames a %(name)s would fail at render time."""
    import re

    placeholder = re.compile(r"%\(\w+\)s|%%")
    for language in LANGUAGES:
        for msgid, msgstr in locale_build.parse(_po(language).read_text("utf-8")).items():
            if msgid:
                source = msgid.split("\x04")[-1]
                assert sorted(placeholder.findall(source)) == sorted(placeholder.findall(msgstr)), (
                    language,
                    source,
                )


def test_a_po_file_with_a_broken_string_is_refused() -> None:
    with pytest.raises(locale_build.POError):
        locale_build.parse('msgid "ok"\nmsgstr "fine\n')


def _member(language: str = "", business_language: str = "en", role: str = Membership.Role.MANAGER):  # type: ignore[no-untyped-def]
    business = factories.business(ui_language=business_language)
    channel = factories.channel(business, kind=Channel.Kind.BRIDGE)
    chat = factories.chat(channel, customer_name="Айгерім")
    factories.customer_message(chat, "Сәлем")
    user = factories.manager(business, role=role)
    Membership.objects.filter(user=user).update(ui_language=language)
    client = Client()
    client.force_login(user)
    return client, chat, user


def test_an_english_member_sees_the_inbox_as_before() -> None:
    client, chat, _ = _member()
    html = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
    assert '<html lang="en">' in html
    assert ">Chats</a>" in html
    assert "Take over</button>" in html
    assert "Входящие" not in html


def test_a_russian_member_sees_the_russian_inbox() -> None:
    client, chat, _ = _member("ru")
    response = client.get(f"/inbox/chat/{chat.pk}/")
    html = response.content.decode()
    assert response["Content-Language"] == "ru"
    assert '<html lang="ru">' in html
    assert "<title>Айгерім · Входящие</title>" in html
    assert ">Чаты</a>" in html
    assert ">Уведомления</a>" in html
    assert "Взять чат</button>" in html  # the chat header
    assert "Отправить</button>" in html  # the composer
    assert "Внутренняя заметка" in html
    assert ">Ждёт человека<" in html or ">Бот<" in html  # the owner badge, a model label
    assert ">Chats</a>" not in html
    assert "Take over</button>" not in html


def test_a_kazakh_member_sees_the_kazakh_inbox() -> None:
    client, chat, _ = _member("kk")
    html = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
    assert '<html lang="kk">' in html
    assert ">Чаттар</a>" in html
    assert "Чатты алу</button>" in html
    assert "Жіберу</button>" in html
    assert ">Chats</a>" not in html


def test_a_member_without_a_choice_gets_the_business_default() -> None:
    client, _, _ = _member("", business_language="ru")
    assert ">Чаты</a>" in client.get("/inbox/").content.decode()


def test_the_member_choice_beats_the_business_default() -> None:
    client, _, _ = _member("en", business_language="kk")
    assert ">Chats</a>" in client.get("/inbox/").content.decode()


def test_the_reports_page_names_reasons_and_units_in_russian() -> None:
    client, chat, _ = _member("ru", role=Membership.Role.ADMIN)
    Handoff.objects.create(chat=chat, reason="ready_to_buy")
    html = client.get("/inbox/reports/").content.decode()
    assert "<h1>Отчёты</h1>" in html
    assert "Передачи по причинам" in html
    assert "Готов купить" in html  # the reason, in the table and the chart
    assert 'aria-label="Передачи по причинам"' in html  # the chart
    assert "Ready to buy" not in html


def test_a_member_chooses_their_language_and_it_is_kept() -> None:
    client, _, user = _member()
    membership = Membership.objects.get(user=user)
    page = client.get("/inbox/settings/notifications/").content.decode()
    assert f'name="{membership.pk}-ui_language"' in page
    response = client.post(
        "/inbox/settings/notifications/", {f"{membership.pk}-ui_language": "ru"}, follow=True
    )
    membership.refresh_from_db()
    assert membership.ui_language == "ru"
    html = response.content.decode()
    assert "Настройки сохранены." in html  # said in the language just chosen
    assert "<h1>Мой профиль и уведомления</h1>" in html
    assert ">Чаты</a>" in client.get("/inbox/").content.decode()
    client.post("/inbox/settings/notifications/", {f"{membership.pk}-ui_language": "xx"})
    membership.refresh_from_db()
    assert membership.ui_language == "ru"  # an unknown code changes nothing


def test_the_login_page_speaks_the_last_members_language() -> None:
    client, _, _ = _member("kk")
    client.get("/inbox/")
    client.post("/accounts/logout/")
    assert "<h1>Кіру</h1>" in client.get("/accounts/login/").content.decode()
    assert "<h1>Log in</h1>" in Client().get("/accounts/login/").content.decode()
    browser = Client(HTTP_ACCEPT_LANGUAGE="ru-RU,ru;q=0.9")
    assert "<h1>Войти</h1>" in browser.get("/accounts/login/").content.decode()


def test_pushed_fragments_speak_the_business_language() -> None:
    _, chat, _ = _member("en", business_language="ru")
    message = Message.objects.get(chat=chat)
    chat.status = "snoozed"
    chat.last_message = message  # type: ignore[attr-defined]
    row = fragments.row(chat)["html"]
    assert ">Отложен<" in row  # pushed to every member's tab, in the team's language
    message.status = Message.Status.FAILED
    assert "Не доставлено:" in fragments.message_html(message)


def test_dates_and_numbers_follow_the_language() -> None:
    client, chat, _ = _member("ru", role=Membership.Role.ADMIN)
    factories.customer_message(chat, "ещё", kind=Message.Kind.VOICE)
    html = client.get("/inbox/reports/").content.decode()
    assert "100,0%" in html or "50,0%" in html  # the voice share, with a decimal comma


def test_the_admin_sets_the_business_default_for_the_team() -> None:
    admin_client, chat, _ = _member("ru", role=Membership.Role.ADMIN)
    business = chat.channel.business
    manager = factories.manager(business)
    page = admin_client.get(f"/inbox/settings/business/?business={business.pk}").content.decode()
    assert "Часовой пояс, язык, слова отписки и напоминания" in page
    assert "Язык входящих" in page
    response = admin_client.post(
        f"/inbox/settings/business/?business={business.pk}",
        {"timezone": "UTC", "language": "en", "ui_language": "kk", "resolve_returns_to": "bot"},
        follow=True,
    )
    assert "сохранены" in response.content.decode()  # the admin's own choice: Russian
    business.refresh_from_db()
    assert business.ui_language == "kk"
    member = Client()
    member.force_login(manager)
    assert ">Чаттар</a>" in member.get("/inbox/").content.decode()
    message = Message.objects.get(chat=chat)
    chat.last_message = message  # type: ignore[attr-defined]
    assert "Оқылмаған хабарлар" in fragments.row(chat)["html"]  # pushed in the new default


def test_the_demo_shop_speaks_russian(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "demo-admin")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "demo-password-for-tests")
    call_command("seed_demo", stdout=io.StringIO())
    membership = Membership.objects.select_related("business").get(user__username="demo-admin")
    assert (membership.business.language, membership.business.ui_language) == ("ru", "ru")
    assert membership.ui_language == "ru"
    assert membership.business.channels.get().language == "ru"
    client = Client()
    client.force_login(membership.user)
    assert ">Чаты</a>" in client.get("/inbox/").content.decode()
    sandbox = client.get("/inbox/sandbox/", follow=True).content.decode()
    assert "Вы — клиент." in sandbox
    assert "Начать заново" in sandbox


def test_the_error_pages_speak_the_browsers_language() -> None:
    russian = Client(HTTP_ACCEPT_LANGUAGE="ru-RU,ru;q=0.9").get("/no/such/page/")
    assert russian.status_code == 404
    html = russian.content.decode()
    assert '<html lang="ru">' in html
    assert "<h1>Страница не найдена</h1>" in html
    assert "Вернуться во входящие" in html
    kazakh = Client()
    kazakh.cookies["django_language"] = "kk"  # the last member who signed in here
    assert "<h1>Бет табылмады</h1>" in kazakh.get("/no/such/page/").content.decode()
    assert "<h1>Page not found</h1>" in Client().get("/no/such/page/").content.decode()


def test_the_reset_mail_speaks_the_members_language_not_the_askers() -> None:
    _, _, user = _member("ru")
    user.email = "dana@example.com"
    user.save()
    asker = Client(HTTP_ACCEPT_LANGUAGE="en", REMOTE_ADDR="198.51.100.77")
    done = asker.post("/accounts/password_reset/", {"email": "dana@example.com"}, follow=True)
    assert "<h1>Check your mail</h1>" in done.content.decode()  # the page: the asker's
    (sent,) = mail.outbox
    assert sent.subject.startswith("Новый пароль для входящих на ")
    assert f"Ваше имя пользователя: {user.get_username()}" in sent.body
    assert "password" not in sent.body.lower()
    link = re.search(r"https?://[^/\s]+(/accounts/reset/\S+)", str(sent.body))
    assert link is not None
    reader = Client(HTTP_ACCEPT_LANGUAGE="kk")
    form = reader.get(link[1], follow=True)
    assert "<h1>Құпиясөз орнатыңыз</h1>" in form.content.decode()
    mismatch = reader.post(
        form.redirect_chain[-1][0],
        {"new_password1": "oak-table-120k", "new_password2": "oak-table-121k"},
    )
    assert "Енгізілген екі құпиясөз сәйкес келмейді." in mismatch.content.decode()


def _failed_reply(chat_id: int, user_id: int, code: str) -> Message:
    chat = Chat.objects.get(pk=chat_id)
    return Message.objects.create(
        chat=chat, channel=chat.channel, direction="out", author="manager", sent_by_id=user_id,
        from_me=True, text="Дубовый стол: 120 000 ₸.", provider_message_id=f"wamid.failed{code}",
        status=Message.Status.FAILED, error_code=code, error_title="Message undeliverable",
    )  # fmt: skip


def test_a_delivery_failure_is_russian_in_the_inbox_and_english_in_the_api() -> None:
    client, chat, user = _member("ru")
    failed = _failed_reply(chat.pk, user.pk, "131026")
    html = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
    assert "Не доставлено: Этого номера нет в WhatsApp" in html
    assert "Клиент не может получать сообщения WhatsApp на этот номер" in html  # no Resend
    assert "This number is not on WhatsApp" not in html
    _, token = create_token(user, "tests")
    shown = Client(HTTP_ACCEPT_LANGUAGE="ru").get(
        f"/api/v1/chats/{chat.pk}", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert shown.headers["Content-Language"] == "en"  # whatever the caller's Accept-Language
    (message,) = [m for m in shown.json()["messages"] if m["id"] == failed.pk]
    assert message["error_explanation"].startswith("This number is not on WhatsApp")
    refused = Client(HTTP_ACCEPT_LANGUAGE="ru").post(
        f"/api/v1/chats/{chat.pk}/messages/{failed.pk}/resend",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert refused.status_code == 409
    assert refused.json()["detail"].startswith("The customer cannot receive WhatsApp messages")


def test_an_unknown_meta_code_is_explained_in_kazakh_with_metas_own_words() -> None:
    client, chat, user = _member("kk")
    _failed_reply(chat.pk, user.pk, "131999")
    html = client.get(f"/inbox/chat/{chat.pk}/").content.decode()
    assert "WhatsApp бұл хабарды жеткізе алмады. WhatsApp жауабы: Message undeliverable" in html


def test_the_review_fix_page_speaks_russian() -> None:
    client, chat, _ = _member("ru", role=Membership.Role.ADMIN)
    handoff = Handoff.objects.create(chat=chat, reason=HandoffReason.OUTSIDE_KNOWLEDGE_BASE)
    review = client.get("/inbox/review/").content.decode()
    assert "<h2>Исправить, по причинам</h2>" in review
    assert "Добавить недостающий товар</a>" in review  # the entry's fixes
    page = client.get(f"/inbox/review/fix/item/?source=handoff:{handoff.pk}").content.decode()
    assert "<h1>Добавить недостающий товар</h1>" in page
    assert "<strong>Клиент написал:</strong> <q>Сәлем</q>" in page  # the customer's own words
    assert "Сначала повтор</button>" in page
    refused = client.post(
        "/inbox/review/fix/item/",
        {"source": f"handoff:{handoff.pk}", "name": "Дубовый стол", "price": "120000"},
    )
    assert "Сначала загрузите прайс-лист." in refused.content.decode()  # a flash message
