"""The inbox in each member's language: English by default, Russian or Kazakh where the member or
the business chose it (inbox/web/local_language.py, locale/, inbox/site/locale_build.py)."""

from __future__ import annotations

import gettext
import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from inbox.conversations.models import Channel, Handoff, Membership, Message
from inbox.site import locale_build
from inbox.web import fragments
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
