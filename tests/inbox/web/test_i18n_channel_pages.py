"""The channels list, the channel add and edit pages in Russian and Kazakh: a business admin who
chose Russian meets no English word there (health lines, form labels, help texts, errors, flash
messages, the gateway and provider boxes, "Test connection"), only the technical values they
copy (URLs, tokens, event names) and product names."""

from __future__ import annotations

import html as html_module
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from inbox.conversations.models import Channel, Job, Membership, MessageTemplate
from inbox.site import locale_build
from tests import factories

pytestmark = pytest.mark.django_db

LANGUAGES = ("ru", "kk")
# The templates of these pages and the Python that words them: every string marked there must
# be translated in both catalogues.
CHANNEL_PAGES = [
    "templates/inbox/settings/channels.html",
    "templates/inbox/settings/channel_add.html",
    "templates/inbox/settings/channel_edit.html",
    "templates/inbox/settings/_gateway_connection.html",
    "templates/inbox/settings/_field.html",
    "templates/inbox/settings/_choices.html",
    "templates/inbox/_progress.html",
    "inbox/web/settings/channel_add.py",
    "inbox/web/settings/channel_settings.py",
    "inbox/web/settings/gateway_setup.py",
    "inbox/web/forms.py",
    "inbox/platform/egress.py",
    "integrations/whatsapp/template_admin.py",
    "integrations/whatsapp/template_sync.py",
    "integrations/whatsapp/gateways/evolution.py",
    "integrations/whatsapp/gateways/waha.py",
]
# Words a page may show in Latin letters whatever its language: product and protocol names, and
# the names of the settings an admin copies into a provider's console.
TECHNICAL = {
    "api",
    "whatsapp",
    "cloud",
    "evolution",
    "waha",
    "meta",
    "manager",
    "waba",
    "url",
    "urls",
    "http",
    "https",
    "bearer",
    "bitrix24",
    "crm",
    "docs",
    "bridges",
    "webhook",
    "webhooks",
    "json",
    "phone",
    "number",
    "callback",
    "verify",
    "token",
    "and",
    "save",
    "setup",
    "id",
    "business",
    "account",
    "config",
    "outbound_allowed_hosts",
    "whatsapp_verify_token",
    "whatsapp_app_secret",
    "whatsapp_business_messaging",
    "post",
    "sessions",
    "key",
    "your",
    "channel",
    "x-api-key",
    "hash",
    "instance",
    "create",
    "shop",
    "default",
    "evolution:8080",
    "waha:3000",
    "webhooks:8100",
    "enterprise",
    "open",
    "working",
    "web",
    "compose",
    "md",
    "security",
    "en",
    "ru",
    "kk",
    "asia",
    "almaty",
    "configuration",
}


def untranslated(
    page: str,
    allowed: set[str] = TECHNICAL,
) -> set[str]:
    """The Latin words a reader sees in `page`'s main part (not its markup, scripts or code
    blocks), less `allowed` and values with digits (a masked key, a host)."""
    body = re.split(r"<main\b[^>]*>", page, maxsplit=1)[-1]
    body = re.sub(r"<(script|style|pre|code|nav)\b.*?</\1>", " ", body, flags=re.S)
    body = re.sub(r"<header\b.*?</header>", " ", body, flags=re.S)
    body = re.sub(r"<[^>]+>", " ", body)
    text = html_module.unescape(body)
    words = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z_:\-0-9]*[A-Za-z0-9]", text)}
    return {w for w in words if w not in allowed and not re.search(r"\d", w)}


def _admin(language: str) -> tuple[Client, Membership]:
    business = factories.business("Магазин", timezone="Asia/Almaty")
    user = factories.manager(business, "әкімші", role=Membership.Role.ADMIN)
    membership = Membership.objects.get(user=user)
    membership.ui_language = language
    membership.save(update_fields=["ui_language"])
    client = Client()
    client.force_login(user)
    return client, membership


def _po(language: str) -> Path:
    return locale_build.LOCALE_DIR / language / "LC_MESSAGES" / "django.po"


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_string_of_the_channel_pages_is_translated(language: str) -> None:
    catalogue = locale_build.parse(_po(language).read_text(encoding="utf-8"))
    missing = []
    for path in CHANNEL_PAGES:
        text = (locale_build.ROOT / path).read_text(encoding="utf-8")
        keys = (
            locale_build.python_strings(text)
            if path.endswith(".py")
            else locale_build.template_strings(text)
        )
        for context, msgid in keys:
            key = f"{context}\x04{msgid}" if context else msgid
            translation = catalogue.get(key, "").strip()
            if not translation or (translation == msgid and re.search(r"[a-z]{4}", msgid)):
                missing.append(f"{path}: {msgid}")
    assert missing == []


def test_the_channels_list_says_each_channels_health_in_russian() -> None:
    client, membership = _admin("ru")
    business = membership.business
    now = timezone.now()
    factories.channel(business, name="Выключенный", is_active=False)
    factories.channel(business, name="Новый")
    factories.channel(business, name="Живой", last_event_at=now - timedelta(minutes=5))
    factories.channel(
        business,
        name="Молчит",
        kind=Channel.Kind.BRIDGE,
        last_event_at=now - timedelta(hours=5),
        silent_alert_minutes=60,
    )
    Job.objects.create(business=business, kind=Job.Kind.PURGE, done=3, total=10, errors=2)

    page = client.get("/inbox/settings/channels/").content.decode()

    assert ">Выключен<" in page
    assert ">Событий ещё не было<" in page
    assert "Последнее событие 5\xa0минут назад" in page
    assert "Молчит уже 5\xa0часов — дольше допустимых 60 мин: телефон в сети?" in page
    assert "Мост через связанное устройство" in page  # the kind
    assert "Очистка данных (срок хранения)" in page  # the purge's progress
    assert "ошибок: <span data-job-errors>2</span>" in page
    for english in ("Switched off", "No event", "Last event", "Silent for", "Linked-device"):
        assert english not in page
    assert untranslated(page, TECHNICAL | {"sandbox"}) == set()


def test_adding_a_channel_speaks_russian_from_the_kinds_to_the_flash() -> None:
    client, _ = _admin("ru")

    kinds = client.get("/inbox/settings/channels/new/").content.decode()
    assert "<h1>Добавить канал</h1>" in kinds
    assert "Какой тип номера?" in kinds
    assert "Тестовый чат в браузере: попробуйте ассистента" in kinds
    assert "Песочница (тестовый чат в браузере)" in kinds
    assert "A test chat" not in kinds
    assert untranslated(kinds) == set()

    form = client.get("/inbox/settings/channels/new/?kind=evolution").content.decode()
    assert "Добавить канал: Evolution API (связанное устройство)" in form
    assert "<span>URL шлюза</span>" in form
    assert "Базовый URL Evolution API, по которому его видят входящие" in form
    assert "Что видят менеджеры" in form
    assert "Gateway URL" not in form
    assert untranslated(form) == set()

    refused = client.post(
        "/inbox/settings/channels/new/?kind=evolution",
        {"name": "Основной", "bridge_url": "http://10.0.0.5:8080", "bridge_token": "k",
         "gateway_instance": ""},
    ).content.decode()  # fmt: skip
    assert "10.0.0.5 — частный или локальный адрес" in refused
    assert "Обязательное поле." in refused  # Django's own words for the missing instance
    assert "private or local" not in refused
    assert untranslated(refused) == set()

    added = client.post(
        "/inbox/settings/channels/new/?kind=waha",
        {"name": "Основной", "bridge_url": "https://waha.example.kz", "bridge_token": "k",
         "gateway_instance": "default"},
        follow=True,
    ).content.decode()  # fmt: skip
    assert "Канал «Основной» добавлен. Теперь направьте провайдера на входящие." in added
    assert "Настройки для шлюза" in added  # the new channel's page
    assert untranslated(added, TECHNICAL | {"example", "kz"}) == set()


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (Channel.Kind.EVOLUTION, "Переменная окружения шлюза"),
        (Channel.Kind.WAHA, "<code>config</code> сессии, подписанный ключом вашего канала"),
        (Channel.Kind.CLOUD_API, "Куда провайдер отправляет события"),
        (Channel.Kind.BRIDGE, "Мост отправляет сюда свои события"),
        (Channel.Kind.SANDBOX, "Пока ассистент отвечает"),
    ],
)
def test_each_kinds_channel_page_is_russian(kind: str, expected: str) -> None:
    client, membership = _admin("ru")
    channel = factories.channel(membership.business, name="Основной", kind=kind)

    page = client.get(f"/inbox/settings/channels/{channel.pk}/").content.decode()

    assert expected in page or kind == Channel.Kind.SANDBOX
    assert "<legend>Общие</legend>" in page
    assert "Рабочие часы" in page
    assert "<th>Понедельник</th>" in page
    assert "Пауза перед ответом, секунды" in page
    assert "Выключено: бот отвечает сам" in page  # the approval choices
    for english in ("General", "Working hours", "Monday", "Save</button>", "Debounce"):
        assert english not in page
    assert untranslated(page) == set()


def test_the_cloud_api_page_names_templates_and_their_states_in_russian() -> None:
    client, membership = _admin("ru")
    channel = factories.channel(membership.business, name="Основной", kind=Channel.Kind.CLOUD_API)
    MessageTemplate.objects.create(
        channel=channel, name="order_ready", language="ru", category="UTILITY", status="APPROVED"
    )
    MessageTemplate.objects.create(
        channel=channel, name="promo", language="ru", category="MARKETING", status="PENDING"
    )

    page = client.get(f"/inbox/settings/channels/{channel.pk}/").content.decode()

    assert "Шаблоны сообщений" in page
    assert "<td>Сервисный</td><td>Одобрен</td>" in page
    assert "<td>Маркетинг</td><td>На проверке</td>" in page
    assert "Без шаблона: ответ ждёт, пока клиент напишет" in page
    assert "Pending review" not in page
    assert untranslated(page, TECHNICAL | {"order_ready", "promo", "ru"}) == set()

    chosen = client.post(
        f"/inbox/settings/channels/{channel.pk}/templates/reengage/",
        {"template": str(MessageTemplate.objects.get(name="order_ready").pk)},
        follow=True,
    ).content.decode()
    assert "приглашают клиента вернуться шаблоном order_ready (ru)." in chosen


def test_saving_a_channel_and_its_errors_are_russian() -> None:
    client, membership = _admin("ru")
    channel = factories.channel(membership.business, name="Основной", kind=Channel.Kind.SANDBOX)
    form = {
        "name": "Основной", "is_active": "on", "language": "ru", "debounce_seconds": "4",
        "idle_release_hours": "4", "late_answer_cutoff_minutes": "30",
        "voice_confidence_threshold": "1.5", "silent_alert_minutes": "120",
        "wh_mon_from": "18:00", "wh_mon_to": "09:00",
    }  # fmt: skip

    refused = client.post(f"/inbox/settings/channels/{channel.pk}/", form).content.decode()

    assert "От 0 до 1 (например, 0.6)." in refused
    assert "Понедельник: укажите оба времени, сначала начало." in refused
    assert untranslated(refused) == set()
    form.update(voice_confidence_threshold="0.6", wh_mon_from="09:00", wh_mon_to="18:00")
    saved = client.post(f"/inbox/settings/channels/{channel.pk}/", form, follow=True)
    assert "Настройки «Основной» сохранены." in saved.content.decode()


def test_test_connection_answers_in_the_admins_language() -> None:
    client, membership = _admin("kk")
    channel = factories.channel(membership.business, name="Негізгі", kind=Channel.Kind.WAHA)

    page = client.get(f"/inbox/settings/channels/{channel.pk}/").content.decode()
    assert "Қосылымды тексеру</button>" in page
    assert "Сақталған баптаулармен шлюздан телефонның байланғанын сұрайды." in page
    assert untranslated(page) == set()

    url = f"/inbox/settings/channels/{channel.pk}/test-connection/"
    answer = client.post(url, HTTP_HX_REQUEST="true").content.decode()
    assert "Байланбаған: Алдымен шлюз URL-ін көрсетіп, сақтаңыз." in answer
    Channel.objects.filter(pk=channel.pk).update(bridge_url="http://10.0.0.5:3000")
    answer = client.post(url, HTTP_HX_REQUEST="true").content.decode()
    assert "WAHA URL-іне рұқсат жоқ: 10.0.0.5 — жеке немесе жергілікті мекенжай" in answer
    flashed = client.post(url, follow=True).content.decode()  # without htmx: a message
    assert "Байланбаған: WAHA URL-іне рұқсат жоқ" in flashed
    Channel.objects.filter(pk=channel.pk).update(
        last_event_at=timezone.now() - timedelta(minutes=7)
    )
    listed = client.get("/inbox/settings/channels/").content.decode()
    assert "Соңғы оқиға 7\xa0минут бұрын" in listed  # Django's Kazakh has no time units
    assert untranslated(listed) == set()


def test_an_english_admin_still_reads_english() -> None:
    client, membership = _admin("")
    channel = factories.channel(membership.business, name="Main", kind=Channel.Kind.EVOLUTION)
    page = client.get(f"/inbox/settings/channels/{channel.pk}/").content.decode()
    assert "<legend>General</legend>" in page
    assert "<span>Gateway URL</span>" in page
    assert "Settings to give the gateway" in page
    assert "No event received yet" in client.get("/inbox/settings/channels/").content.decode()


def test_django_words_missing_from_its_kazakh_catalogue_come_from_ours() -> None:
    client, membership = _admin("kk")
    channel = factories.channel(membership.business, name="Негізгі", kind=Channel.Kind.SANDBOX)
    form = {
        "name": "Негізгі", "is_active": "on", "language": "kk", "debounce_seconds": "-1",
        "idle_release_hours": "4", "late_answer_cutoff_minutes": "30",
        "voice_confidence_threshold": "0.6", "silent_alert_minutes": "120",
    }  # fmt: skip

    refused = client.post(f"/inbox/settings/channels/{channel.pk}/", form).content.decode()

    assert "Бұл мән 0 мәнінен кем болмауы керек." in refused
    assert untranslated(refused) == set()
