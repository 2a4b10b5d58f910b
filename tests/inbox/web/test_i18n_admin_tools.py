"""The price list, replies and labels, replay, assistant settings and sandbox pages in Russian
and Kazakh: every string marked on them is translated, and a Russian-speaking admin reads no
English on them (tests/inbox/web/test_i18n.py has the rest of the inbox)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from assistant.knowledge import price_upload
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import PriceList, ReplayRun, ReplayTurn
from inbox.conversations import progress
from inbox.conversations.models import Channel, Job, Membership, Message, Turn
from inbox.site import locale_build
from tests import factories

pytestmark = pytest.mark.django_db

LANGUAGES = ("ru", "kk")
TEMPLATES = [
    "templates/inbox/settings/price_list.html",
    "templates/inbox/settings/price_list_items.html",
    "templates/inbox/settings/price_list_restore.html",
    "templates/inbox/settings/_price_diff.html",
    "templates/inbox/_progress.html",
    "templates/inbox/settings/replies_labels.html",
    "templates/inbox/settings/replay_start.html",
    "templates/inbox/settings/replay_run.html",
    "templates/inbox/settings/_replay_answer.html",
    "templates/inbox/settings/assistant.html",
    "templates/sandbox/choose.html",
    "templates/sandbox/chat.html",
    "templates/sandbox/_conversation.html",
]
# The Python behind those pages: forms, flash messages, and the errors they show.
MODULES = [
    "inbox/web/settings/admin_pages.py",
    "inbox/web/settings/price_list_items.py",
    "inbox/web/settings/replies_labels_page.py",
    "inbox/web/settings/replay_pages.py",
    "inbox/web/settings/model_settings.py",
    "inbox/web/forms.py",
    "assistant/knowledge/price_import.py",
    "assistant/knowledge/price_files.py",
    "assistant/knowledge/price_rows.py",
    "assistant/knowledge/price_versions.py",
    "assistant/knowledge/price_upload.py",
    "assistant/knowledge/settings_validation.py",
    "assistant/replay/candidate.py",
    "assistant/replay/engine.py",
]


def _catalogue(language: str) -> dict[str, str]:
    po = locale_build.LOCALE_DIR / language / "LC_MESSAGES" / "django.po"
    return locale_build.parse(po.read_text(encoding="utf-8"))


def _marked(path: str) -> list[tuple[str, str]]:
    text = (locale_build.ROOT / path).read_text(encoding="utf-8")
    if path.endswith(".html"):
        return locale_build.template_strings(text)
    return locale_build.python_strings(text)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_string_of_these_pages_is_translated(language: str) -> None:
    catalogue = _catalogue(language)
    untranslated = [
        f"{path}: {msgid}"
        for path in TEMPLATES + MODULES
        for context, msgid in _marked(path)
        if not catalogue.get(f"{context}\x04{msgid}" if context else msgid, "").strip()
    ]
    assert untranslated == []


def test_kazakh_is_written_in_cyrillic() -> None:
    """No Latin look-alike (an `i` for `і`) in a Kazakh word of these pages."""
    kazakh = _catalogue("kk")
    mixed = []
    for path in TEMPLATES + MODULES:
        for context, msgid in _marked(path):
            text = kazakh.get(f"{context}\x04{msgid}" if context else msgid, "")
            text = re.sub(r"%\(\w+\)s|<[^>]*>", " ", text)
            mixed += [w for w in re.findall(r"\w+", text) if re.search(r"[a-z]", w, re.I)
                      and re.search(r"[а-яёәғқңөұүһі]", w, re.I)]  # fmt: skip
    assert mixed == []


def _admin(language: str = "ru") -> tuple[Any, Any, Client]:
    business = factories.business(name="Мебель")
    user: Any = factories.manager(business, role=Membership.Role.ADMIN)
    Membership.objects.filter(user=user).update(ui_language=language)
    client = Client()
    client.force_login(user)
    return business, user, client


# A textarea holds the business's own text (its rules), data rather than the page's words.
_TAG = re.compile(r"<(script|style|textarea)\b.*?</\1>|<[^>]*>", re.S)
_SHOWN_ATTRIBUTE = re.compile(r'\b(?:aria-label|placeholder|title|alt|data-label)="([^"]*)"')


def _shown(html: str) -> str:
    """What a reader meets: the page's words, and the attributes a screen reader or a hover
    says (not class names, data codes or URLs)."""
    return _TAG.sub(lambda m: " " + " ".join(_SHOWN_ATTRIBUTE.findall(m[0])) + " ", html)


def _english_free(html: str, *english: str) -> None:
    shown = _shown(html)
    for text in english:
        assert text not in shown, text


def test_the_price_list_page_and_its_preview_speak_russian() -> None:
    business, user, client = _admin()
    apply_price_list(
        parse_price_file(b"name,price\nOak table,32000\nChair,9000\n", "a.csv", "KZT"), business
    )
    staged = price_upload.stage(b"name,price,in stock\nOak table,35000,yes\nLamp,4000,no\n"
                                b"Broken,abc,yes\n", "new.csv", "", business_id=business.pk,
                                channel_id=None, user=user)  # fmt: skip

    html = client.get(f"/inbox/settings/price-list/?upload={staged.token}").content.decode()

    assert "<h1>Прайс-лист</h1>" in html
    assert "Предпросмотр: new.csv → Мебель" in html
    assert "Проблем: 1." in html
    assert "строка 4: цена «abc» — не число" in html  # the worker's error, shown translated
    assert "в файле не найдена валюта; цены сохранены без неё" in html  # and its warning
    assert "Пропустить ошибочные строки (1) и применить остальные (2)" in html
    assert "Изменения относительно текущей версии" in html
    assert ">Наименование</th>" in html
    assert "В наличии" in html
    assert "Нет в наличии" in html
    assert "Загрузить новую версию" in html
    assert "Используется, если в файле не указана валюта." in html  # the form's help
    assert "Мебель: прайс-лист" in html  # the form's choice
    assert ">Oak table<" in html  # data stays as it is
    _english_free(html, "Price list", "Preview:", "problem", "is not a number", "Skip the",
                  "Changes against", "Name", "In stock", "Upload a new version", "History",
                  "Used when", "no currency found")  # fmt: skip


def test_a_file_that_cannot_be_read_is_explained_in_kazakh() -> None:
    business, user, client = _admin("kk")
    staged = price_upload.stage(b"sku;name\n1;Oak\n", "bad.csv", "", business_id=business.pk,
                                channel_id=None, user=user)  # fmt: skip

    html = client.get(f"/inbox/settings/price-list/?upload={staged.token}").content.decode()

    assert "тақырып жолы табылмады" in html
    assert "Файл түзетілмейінше ештеңе жүктелмейді." in html
    _english_free(html, "no header row", "Nothing will be imported")


def test_applying_and_rolling_back_say_so_in_russian() -> None:
    business, user, client = _admin()
    first = apply_price_list(parse_price_file(b"name,price\nOak,1000\n", "a.csv"), business)
    staged = price_upload.stage(b"name,price\nOak,2000\nPine,5\n", "b.csv", "KZT",
                                business_id=business.pk, channel_id=None, user=user)  # fmt: skip

    applied = client.post(
        "/inbox/settings/price-list/", {"token": staged.token}, follow=True
    ).content.decode()
    restore = client.get(f"/inbox/settings/price-list/versions/{first.pk}/restore/")
    rolled = client.post(
        f"/inbox/settings/price-list/versions/{first.pk}/restore/", follow=True
    ).content.decode()

    assert "Применена версия 2 (товаров: 2)." in applied
    assert ">текущая<" in applied
    assert "Откатить к v1…" in applied
    page = restore.content.decode()
    assert "<h1>Откатить к версии 1?</h1>" in page
    assert "Добавлено: <span" in page
    assert "удалено: <span" in page
    assert "Откат выполнен: версия 3 — копия версии 1 (товаров: 1)." in rolled
    _english_free(applied + page + rolled, "Applied version", "Roll back", "Rolled back",
                  "added ·", "current")  # fmt: skip


def test_the_items_page_and_an_edit_speak_russian() -> None:
    business, _, client = _admin()
    apply_price_list(parse_price_file(b"name,price\nOak table,32000\n", "a.csv", "KZT"), business)
    price_list = PriceList.objects.get(business=business)
    item = price_list.current_version.items.get()  # type: ignore[union-attr]

    html = client.get(f"/inbox/settings/price-list/{price_list.pk}/items/?q=oak").content.decode()
    refused = client.post(
        f"/inbox/settings/price-list/items/{item.pk}/", {"price": "abc", "aliases": ""}, follow=True
    ).content.decode()
    saved = client.post(
        f"/inbox/settings/price-list/items/{item.pk}/",
        {"price": "33000", "aliases": "стол"},
        follow=True,
    ).content.decode()

    assert "<h1>Прайс-лист: Мебель</h1>" in html
    assert "Найти товар" in html
    assert "Под «oak» подходит товаров: 1 из 1." in html
    assert 'aria-label="Цена: Oak table (KZT)"' in html
    assert "«Oak table» не изменён: цена «abc» — не число" in refused
    assert "«Oak table» сохранён: теперь у списка версия 2." in saved
    assert "Версия 2 · изменено на странице: Oak table" in saved  # named by the admin's edit
    _english_free(html + refused + saved, "Find an item", "Other names", "was not changed",
                  "not a number", "Saved “", "edited on")  # fmt: skip


def test_the_progress_fragment_speaks_russian() -> None:
    business, _, client = _admin()
    job_id = progress.start(business.pk, Job.Kind.PRICE_IMPORT, total=10)

    html = client.get(f"/inbox/progress/{job_id}/").content.decode()

    assert "<strong>Загрузка прайс-листа</strong>" in html
    assert "выполняется" in html
    assert "готово:" in html
    assert "ошибок:" in html
    _english_free(html, "Price-list import", "running", "done", "error", "Started")


def test_replies_and_labels_speak_russian() -> None:
    business, _, client = _admin()
    url = f"/inbox/settings/replies-labels/?business={business.pk}"

    html = client.get(url).content.decode()
    added = client.post(
        url, {"action": "add_label", "label-name": "VIP", "label-colour": "red"}, follow=True
    ).content.decode()
    twice = client.post(
        url, {"action": "add_label", "label-name": "VIP", "label-colour": "red"}
    ).content.decode()

    assert "<h1>Шаблоны ответов и метки</h1>" in html
    assert "Для Мебель." in html
    assert ">Заголовок</span>" in html
    assert ">Сокращение</span>" in html
    assert "Набирается после /, чтобы быстро найти ответ." in html
    assert ">Красный</option>" in html
    assert "Скрывать номер от менеджеров" in html
    assert "Метка добавлена." in added
    assert "У этой компании уже есть метка с таким именем." in twice
    _english_free(html + added + twice, "Canned replies", "Title", "Shortcut", "Add label",
                  "Red", "Mask phone", "Label added", "already has a label")  # fmt: skip


def test_the_assistant_settings_form_speaks_russian() -> None:
    business, _, client = _admin()
    url = f"/inbox/settings/assistant/?business={business.pk}"

    html = client.get(url).content.decode()
    refused = client.post(
        url, {"business_rules": "", "reasons_text": "no colon here", "promises_text": "ok"}
    ).content.decode()

    assert ">Тон и правила компании</span>" in html
    assert ">Причины передачи человеку</span>" in html
    assert "По одной фразе в строке" in html
    assert ">Собственный сервер модели: базовый URL</span>" in html
    assert "Не задан." in html  # the API key
    assert "Пустой базовый URL — модель установки (используется сейчас)." in html
    assert "В строке 1 («no colon here») нет «:»." in refused
    assert "Строка 1: «ok» слишком короткая" in refused
    _english_free(html + refused, "Tone and business rules", "Handoff reasons", "One phrase",
                  "Own model endpoint", "Not set.", "Empty base URL", "has no", "too short")  # fmt: skip


def test_the_replay_pages_speak_russian() -> None:
    business, user, client = _admin()
    chat = factories.chat(factories.channel(business))
    run = ReplayRun.objects.create(
        business=business,
        created_by=user,
        status=ReplayRun.Status.DONE,
        candidate={"rules": {"business_rules": "Доставка 2000"}},
        total=1,
        done=1,
        summary={"total": 1, "counts": {"changed_decision": 1},
                 "handoffs": {"then": 0.0, "now": 1.0}, "blocks": {"then": 0.0, "now": 0.0}},
    )  # fmt: skip
    answer = {"action": "answer", "reason": "", "reply": "Стол 32 000 ₸", "blocked": [],
              "amounts": [{"text": "32 000 ₸", "value": "32000", "ok": True}]}  # fmt: skip
    ReplayTurn.objects.create(
        run=run, chat=chat, customer_text="Сколько стоит стол?",
        change=ReplayTurn.Change.DECISION, then=answer,
        now={**answer, "action": "handoff", "reason": "ready_to_buy", "amounts": []},
    )  # fmt: skip

    start = client.get("/inbox/settings/replay/").content.decode()
    report = client.get(f"/inbox/settings/replay/{run.pk}/").content.decode()
    refused = client.post(
        "/inbox/settings/replay/",
        {"business": business.pk, "days": 7, "limit": 10, "chat_ids": "a,b"},
    ).content.decode()

    assert "<h1>Повтор прошлых чатов</h1>" in start
    assert ">За последние N дней</span>" in start
    assert "Через запятую; пусто — все чаты." in start
    assert ">Все каналы</option>" in start
    assert "<td>Готово</td>" in start  # the run's status
    assert "Id чатов — это числа через запятую." in refused
    assert "изменённые правила, причины передачи и запрещённые обещания." in report
    assert "Никому ничего не отправлено." in report
    assert "Изменилось решение: 1" in report
    assert "Передачи человеку: было 0%, стало 100%." in report
    assert "Применить это изменение" in report
    assert 'data-label="Клиент"' in report
    assert "<strong>Ответил</strong>" in report  # the answer's action, in words
    assert "Готов купить" in report  # the handoff reason, in words
    assert "подтверждено проверкой" in report
    assert "Сколько стоит стол?" in report  # the customer's words stay as written
    _english_free(
        start + report + refused,
        "Replay past chats",
        "Last N days",
        "All channels",
        "Chat ids are",
        "edited rules",
        "Nothing was sent",
        "Changed decision",
        "Handoffs:",
        "Apply this change",
        "proven by",
        "ready_to_buy",
    )
    assert "<strong>answer</strong>" not in report  # fmt: skip


def test_the_sandbox_explains_a_reply_in_russian() -> None:
    business, _, client = _admin()
    channel = factories.channel(business, kind=Channel.Kind.SANDBOX)
    user_id = Membership.objects.get(business=business).user_id
    chat = factories.chat(channel, customer_key=f"sandbox-user-{user_id}")
    asked = factories.customer_message(chat, "Есть дубовый стол?")
    reply = Message.objects.create(
        chat=chat, channel=channel, direction=Message.Direction.OUTBOUND, author=Message.Author.BOT,
        text="Да, 32 000 ₸", status=Message.Status.SENT,
    )  # fmt: skip
    Turn.objects.create(
        chat=chat, first_message_id=asked.pk, last_message_id=asked.pk, generated_at_version=1,
        outcome=Turn.Outcome.HANDED_OFF, backend="catalogue", action="handoff",
        reason="ready_to_buy", reply_message=reply,
    )  # fmt: skip

    html = client.get(f"/inbox/sandbox/{channel.pk}/").content.decode()

    assert "<h1>Песочница: Мебель</h1>" in html
    assert "Передан человеку · Передал чат человеку (Готов купить)" in html
    assert "Ассистент по каталогу" in html
    _english_free(html, "Handed to a human", "handoff", "ready_to_buy", "Catalogue assistant")
