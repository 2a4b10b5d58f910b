"""The Bitrix24 settings pages in Russian and Kazakh: the choice of connection, the form (labels,
help texts, secret states, refusals), the summary, the flash messages and the "test connection"
report, which a worker words in the language of the admin who asked."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from inbox.conversations.models import Membership
from inbox.site import locale_build
from integrations.bitrix24 import tasks
from integrations.bitrix24.models import Bitrix24Settings
from tests import factories
from tests.emulators.bitrix24 import Bitrix24Emulator
from tests.inbox.web.test_i18n_channel_pages import TECHNICAL, untranslated
from tests.integrations.bitrix24.conftest import connect
from tests.integrations.bitrix24.test_settings_page import WEBHOOK, _form

pytestmark = pytest.mark.django_db

PAGES = [
    "templates/inbox/settings/bitrix24.html",
    "templates/inbox/settings/bitrix24_mode.html",
    "templates/inbox/settings/_bitrix24_status.html",
    "integrations/bitrix24/settings_page.py",
    "integrations/bitrix24/models.py",
    "integrations/bitrix24/setup/forms.py",
    "integrations/bitrix24/setup/config.py",
    "integrations/bitrix24/setup/check.py",
]
# Besides the channel pages' technical words: the parts of the addresses and codes the help
# texts quote (a profile address, a stage code, the handler path).
BITRIX = TECHNICAL | {
    "company", "personal", "user", "yourshop", "kz", "rest", "inbox", "client_id",
    "preparation", "portal", "code", "im", "imconnector", "imopenlines", "shop",
}  # fmt: skip


def _admin(language: str) -> tuple[Client, Membership]:
    business = factories.business("Магазин")
    user = factories.manager(business, "әкімші", role=Membership.Role.ADMIN)
    membership = Membership.objects.get(user=user)
    membership.ui_language = language
    membership.save(update_fields=["ui_language"])
    client = Client()
    client.force_login(user)
    return client, membership


@pytest.mark.parametrize("language", ["ru", "kk"])
def test_every_string_of_the_bitrix24_pages_is_translated(language: str) -> None:
    po = locale_build.LOCALE_DIR / language / "LC_MESSAGES" / "django.po"
    catalogue = locale_build.parse(po.read_text(encoding="utf-8"))
    missing = []
    for path in PAGES:
        text = (locale_build.ROOT / path).read_text(encoding="utf-8")
        keys = (
            locale_build.python_strings(text)
            if path.endswith(".py")
            else locale_build.template_strings(text)
        )
        for context, msgid in keys:
            key = f"{context}\x04{msgid}" if context else msgid
            if not catalogue.get(key, "").strip():
                missing.append(f"{path}: {msgid}")
    assert missing == []


def test_choosing_how_to_connect_is_russian() -> None:
    client, _ = _admin("ru")

    page = client.get("/inbox/settings/bitrix24/").content.decode()

    assert "Подключить Битрикс24" in page
    assert "Входящий вебхук" in page
    assert "Подключить как приложение" in page
    assert "Connect" not in page
    assert untranslated(page, BITRIX) == set()


@pytest.mark.parametrize("mode", ["webhook", "app"])
def test_each_modes_form_is_russian(mode: str) -> None:
    client, _ = _admin("ru")

    page = client.get(f"/inbox/settings/bitrix24/?mode={mode}").content.decode()

    assert "Синхронизация включена" in page
    assert "<legend>Что синхронизируется</legend>" in page
    assert "Воронка сделок" in page
    assert ">Сделка</option>" in page
    assert ">Лид</option>" in page
    assert "Не задан." in page  # the secrets' state
    assert ("URL входящего вебхука" in page) == (mode == "webhook")
    assert ("Ключ приложения" in page) == (mode == "app")
    for english in ("What syncs", "Deal pipeline", "Not set.", "Sync switched on"):
        assert english not in page
    assert untranslated(page, BITRIX) == set()


def test_a_refused_webhook_the_saved_settings_and_the_summary_are_russian() -> None:
    client, _ = _admin("ru")

    refused = client.post(
        "/inbox/settings/bitrix24/", _form(webhook_url="http://example.com/rest/1/abc/")
    ).content.decode()
    assert "URL вебхука для example.com должен использовать https" in refused
    assert "must use https" not in refused

    saved = client.post(
        "/inbox/settings/bitrix24/", _form(webhook_url=WEBHOOK), follow=True
    ).content.decode()

    assert "Настройки Битрикс24 для «Магазин» сохранены." in saved
    assert "Задан (портал shop.bitrix24.kz). Оставьте пустым, чтобы сохранить его." in saved
    assert "Стереть сохранённое значение: URL входящего вебхука" in saved
    assert "<li>компания: Магазин</li>" in saved
    assert "<li>режим: Входящий вебхук</li>" in saved
    assert "создаётся: Сделка, воронка: 0, стадия при передаче: PREPARATION" in saved
    assert "Ещё не проверялось." in saved
    assert "Сверить все чаты с CRM</button>" in saved
    assert untranslated(saved, BITRIX) == set()

    queued = client.post("/inbox/settings/bitrix24/", {"action": "full_sync"}, follow=True)
    page = queued.content.decode()
    assert "Проверочная синхронизация чатов (0) поставлена в очередь." in page
    assert "Битрикс24: сверка всех чатов с CRM" in page  # the job's progress
    asked = client.post("/inbox/settings/bitrix24/", {"action": "test"}, follow=True)
    assert "Проверяем подключение… результат появится ниже" in asked.content.decode()
    assert untranslated(asked.content.decode(), BITRIX) == set()


def test_the_test_report_is_worded_in_the_language_of_the_admin_who_asked(
    portal: Bitrix24Emulator,
) -> None:
    client, membership = _admin("kk")
    cfg = connect(portal, membership.business, handoff_stage="NOPE")

    tasks.test_connection_task(cfg.business_id, "kk")  # what the worker runs for this admin
    page = client.get("/inbox/settings/bitrix24/").content.decode()

    assert "порталына" in page
    assert "атынан қосылды; қол жеткізу құқықтары:" in page
    assert "Адамға беру кезеңі: &#x27;NOPE&#x27; кезеңі бұл воронкада жоқ" in page
    assert re.search(r"\d+\xa0минут бұрын тексерілді\.", page)  # Django has no Kazakh units
    assert "Connected to" not in page
    assert "Handoff stage" not in page
    stages = {"nope", "new", "preparation", "executing", "won", "lose"}
    robot = {"integration", "robot"}  # the emulator's user
    assert untranslated(page, BITRIX | stages | robot) == set()

    Bitrix24Settings.objects.filter(pk=cfg.pk).update(
        webhook_url=portal.webhook_url.replace(portal.webhook_code, "x" + portal.webhook_code)
    )
    tasks.test_connection_task(cfg.business_id, "ru")  # a Russian admin asked next
    card = client.get("/inbox/settings/bitrix24/?fragment=status").content.decode()
    # The card around it is the reader's (Kazakh), the report the asker's (Russian).
    assert "Қосылу сәтсіз аяқталды: Битрикс24 отклонил учётные данные" in card
