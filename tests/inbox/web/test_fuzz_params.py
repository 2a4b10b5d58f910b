"""Hostile values in every logged-in view's parameters: never a 500.

A business admin (who sees every page) sends each parameter each view reads, and each field of
every form the pages render, with values that broke parsers before: Unicode digits that
`str.isdigit` accepts and `int` does not (or does, as another number), an integer longer than
Python converts, a negative, dates at the ends of the calendar, markup. Every answer must be a
4xx or a 2xx/3xx. The table of query parameters is checked against the views' source, so a new
`request.GET.get("x")` without a row here fails the suite.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.core.files.base import ContentFile
from django.test import Client

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import PriceItem, PriceList, ReplayRun
from inbox.conversations.models import Business, CannedReply, Label, Message
from tests import factories
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db

HOSTILE = [
    "²",  # isdigit() is true, int() fails
    "١٢",  # Arabic-Indic: int() reads 12
    "１２",  # fullwidth: int() reads 12
    "9" * 5000,  # over Python's 4,300-digit int conversion limit
    "99999999999999999999",  # over a 64-bit id
    "-1",
    "9999-12-31",
    "0001-01-01",
    '<b>"x"</b>',
]

REPO = Path(__file__).resolve().parents[3]
# Query-string parameters each URL reads (POST fields come from the rendered forms too).
QUERY = {
    "/inbox/": ["channel", "label", "offset", "q", "state", "status", "view"],
    "/inbox/chat/{chat}/": ["message", "channel", "label", "offset"],
    "/inbox/chat/{chat}/earlier/": ["before"],
    "/inbox/chat/{chat}/templates/": ["template", "var_1"],
    "/inbox/events/": ["business", "since", "chat"],
    "/inbox/review/": ["reason", "page"],
    "/inbox/review/fix/alias/?source=handoff:{handoff}": ["source"],
    "/inbox/review/fix/item/?source=handoff:{handoff}": ["source"],
    "/inbox/review/fix/manager-only/?source=handoff:{handoff}": ["source"],
    "/inbox/reports/": ["business", "channel", "from", "to"],
    "/inbox/reports/export.csv": ["business", "channel", "from", "to", "table"],
    "/inbox/settings/channels/": [],
    "/inbox/settings/channels/new/": ["business", "kind"],
    "/inbox/settings/channels/new/?kind=waha": [],
    "/inbox/settings/channels/new/?kind=cloud_api": [],
    "/inbox/settings/business/": ["business"],
    "/inbox/settings/price-list/": ["upload"],
    "/inbox/settings/price-list/{price_list}/items/": ["q", "page"],
    "/inbox/settings/assistant/": ["business", "rule"],
    "/inbox/settings/replies-labels/": ["business"],
    "/inbox/settings/bitrix24/": ["business", "fragment", "asked", "mode"],
    "/inbox/settings/bitrix24/?mode=app": [],
    "/inbox/settings/bitrix24/?fragment=status": ["asked"],
    "/inbox/settings/team/": ["business"],
    "/inbox/settings/notifications/": [],
    "/inbox/settings/replay/": ["again", "upload"],
    "/inbox/settings/replay/{run}/": ["group"],
}
# Fields posted to URLs whose forms the pages do not render (buttons, htmx calls).
POSTED = {
    "/inbox/chat/{chat}/label/": ["label", "remove"],
    "/inbox/chat/{chat}/assign/": ["assignee"],
    "/inbox/chat/{chat}/reply/": ["text", "key", "take_from"],
    "/inbox/chat/{chat}/note/": ["text", "key"],
    "/inbox/chat/{chat}/template/": ["name", "language", "key", "var_1"],
    "/inbox/chat/{chat}/pending/": ["text"],
    "/inbox/chat/{chat}/snooze/": ["until"],
    "/inbox/chat/{chat}/draft/approve/": ["draft", "text"],
    "/inbox/chat/{chat}/draft/reject/": ["draft"],
    "/inbox/settings/replies-labels/?business={business}": ["action", "id"],
    "/inbox/settings/team/auto-assign/?business={business}": ["auto_assign"],
    "/inbox/settings/price-list/": ["token", "skip_bad_rows", "target"],
    "/inbox/settings/price-list/items/{item}/": ["price", "aliases", "q"],
    "/inbox/settings/replay/": ["upload", "business", "channel", "chat_ids"],
    "/inbox/settings/replay/{run}/apply/": ["confirm"],
    "/inbox/review/fix/alias/": ["source", "words", "item", "then"],
    "/inbox/review/fix/item/": ["source", "name", "price", "then"],
    "/inbox/review/fix/manager-only/": ["source", "item", "then"],
    "/inbox/review/fix/done/": ["source", "fix"],
}
# Never posted: they end the session or the admin's own membership.
UNSAFE = ("/accounts/logout/", "/remove/")
# Values for required fields a page renders empty, so one hostile field at a time gets past
# the others' validation into the code behind the form.
FILLED = {"username": "fuzzer", "email": "fuzzer@example.com"}


@dataclass(frozen=True)
class Form:
    action: str
    fields: dict[str, str]


class _Forms(HTMLParser):
    """The POST forms of a page: action and each named field's value."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.page = page
        self.forms: list[Form] = []
        self._current: Form | None = None
        self._select = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k: v or "" for k, v in attrs}
        if tag == "form":
            if attr.get("method", "get").lower() == "post":
                action = attr.get("action") or self.page
                if action.startswith("?"):
                    action = urlsplit(self.page).path + action
                self._current = Form(action.replace("&amp;", "&"), {})
                self.forms.append(self._current)
            else:
                self._current = None
        elif tag == "option" and self._current and self._select:
            # A select's value: its selected option, else its first.
            if "selected" in attr or not self._current.fields[self._select]:
                self._current.fields[self._select] = attr.get("value", "")
        elif tag in ("input", "select", "textarea") and self._current and attr.get("name"):
            self._select = attr["name"] if tag == "select" else ""
            if attr.get("type") in ("checkbox", "radio", "file"):
                self._current.fields.setdefault(attr["name"], attr.get("value", "on"))
            else:
                self._current.fields.setdefault(attr["name"], attr.get("value", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = ""
        if tag == "form":
            self._current = None


@pytest.fixture
def world() -> Iterator[tuple[Tenant, Message]]:
    a = tenant("A")
    tenant("B")
    Label.objects.create(business=a.business, name="vip")
    CannedReply.objects.create(business=a.business, title="hi", text="Hello!")
    ReplayRun.objects.create(business=a.business, created_by=a.admin, status=ReplayRun.Status.DONE)
    apply_price_list(
        parse_price_file(b"name,price,aliases\nOak table,1000,stol\n", "a.csv"), a.business
    )
    factories.manager(a.business, username='<img src=x onerror="alert(1)">')
    voice = factories.customer_message(a.chat, "", kind=Message.Kind.VOICE, media_mime="audio/ogg")
    voice.media_file.save(f"voice-{voice.pk}.ogg", ContentFile(b"OggS" + b"\0" * 100))
    yield a, voice
    voice.media_file.delete(save=False)


def _fill(template: str, a: Tenant) -> str:
    run = ReplayRun.objects.get(business=a.business)
    price_list = PriceList.objects.get(business=a.business)
    item = PriceItem.objects.get(version_id=price_list.current_version_id)
    return template.format(
        chat=a.chat.pk,
        business=a.business.pk,
        run=run.pk,
        price_list=price_list.pk,
        item=item.pk,
        handoff=a.handoff.pk,
    )


def _requests(client: Client, a: Tenant) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(method, url, data) for every parameter and every hostile value."""
    for template, names in QUERY.items():
        path, _, query = _fill(template, a).partition("?")
        for name in names:
            for value in HOSTILE:
                yield "GET", path, {**dict(parse_qsl(query)), name: value}
    posted: dict[str, dict[str, str]] = {}
    shapes: set[str] = set()
    for template in QUERY:
        page = _fill(template, a)
        parser = _Forms(page)
        parser.feed(client.get(page).content.decode())
        for form in parser.forms:
            shape = re.sub(r"[0-9]+", "N", form.action + " ".join(sorted(form.fields)))
            if shape in shapes or any(unsafe in form.action for unsafe in UNSAFE):
                continue  # the same form for each member or row: one of them is enough
            shapes.add(shape)
            fields = {k: v or FILLED.get(k, "") for k, v in form.fields.items()}
            posted.setdefault(form.action, {}).update(fields)
    for template, names in POSTED.items():
        posted.setdefault(_fill(template, a), {}).update(dict.fromkeys(names, ""))
    for url, fields in posted.items():
        for name in fields:
            if name == "csrfmiddlewaretoken":
                continue
            for value in HOSTILE:
                yield "POST", url, {**fields, name: value}


def test_no_logged_in_parameter_is_a_server_error(world: tuple[Tenant, Message]) -> None:
    a, voice = world
    client = Client(raise_request_exception=False)
    client.force_login(a.admin)
    errors: list[str] = []
    statuses: Counter[int] = Counter()
    cases = list(_requests(client, a))
    for method, url, data in cases:
        response = client.get(url, data) if method == "GET" else client.post(url, data)
        statuses[response.status_code] += 1
        if response.status_code >= 500:
            errors.append(f"{method} {url} {_short(data)}")
    media = f"/inbox/media/{voice.pk}/"
    for value in HOSTILE:
        for header in (f"bytes={value}-", f"bytes=-{value}", f"bytes=0-{value}"):
            response = client.get(media, headers={"Range": header})
            statuses[response.status_code] += 1
            if response.status_code >= 500:
                errors.append(f"GET {media} Range: {header[:40]}")
    print(f"{len(cases) + 27} cases, statuses {dict(statuses)}")
    assert len(cases) > 1000
    assert errors == [], "\n".join(errors)


def _short(data: dict[str, Any]) -> str:
    return ", ".join(f"{k}={str(v)[:20]!r}" for k, v in data.items() if v and k != "key")


def test_every_query_parameter_a_view_reads_is_fuzzed() -> None:
    """A parameter read by a logged-in page (inbox/web, the Bitrix24 settings page) that no
    row above sends is a gap in the fuzzing."""
    fuzzed = {n for names in [*QUERY.values(), *POSTED.values()] for n in names}
    read = set()
    pages = [
        *(REPO / "inbox" / "web").rglob("*.py"),
        REPO / "integrations/bitrix24/settings_page.py",
    ]
    for path in pages:
        read |= set(re.findall(r"(?:GET|POST|params)(?:\.get\(|\[)\"(\w+)\"", path.read_text()))
    read -= {"attachment"}  # a file: the reply view's own tests send odd files
    assert read <= fuzzed, read - fuzzed


def test_a_foreign_business_is_refused_on_every_admin_page(world: tuple[Tenant, Message]) -> None:
    """`?business=` naming another tenant's business is a 404 on each business admin page,
    those that show all of the admin's businesses too: never the admin's own page instead."""
    a, _ = world
    foreign = Business.objects.create(name="Another tenant's shop")
    client = Client()
    client.force_login(a.admin)
    answered = {}
    for template in [*QUERY, *POSTED]:
        url = _fill(template, a).split("?")[0]
        if not url.startswith(("/inbox/settings/", "/inbox/reports/", "/inbox/review/")):
            continue
        if url == "/inbox/settings/notifications/":
            continue  # the manager's own page, over all their memberships
        for method in ("get", "post"):
            status = getattr(client, method)(f"{url}?business={foreign.pk}").status_code
            if status != 405:
                answered[f"{method.upper()} {url}"] = status
    assert len(answered) > 15
    assert {k: v for k, v in answered.items() if v != 404} == {}
