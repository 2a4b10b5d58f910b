"""Behind the shipped nginx the login limits count per client, and no client can choose the
address it is counted under.

nginx overwrites X-Forwarded-For with the address it saw (`$remote_addr`), never appends to
what the client sent; the deploy files (compose, the systemd unit, inbox.env.example) turn on
LOGIN_TRUST_X_FORWARDED_FOR, so the app counts by that header rather than by REMOTE_ADDR (which
is nginx itself for an app server that does not read proxy headers). The request chain is
replayed from the files themselves: the header nginx's configuration sets for the location, then
daphne's own X-Forwarded-For parsing when compose starts it with `--proxy-headers` (it takes the
first hop: with an appending nginx that is whatever the client wrote), then the login view with
the trust setting compose gives the web processes. No nginx runs here; its configuration is
read, not run (tests/deploy/test_topology.py does the same for the rest of deploy/)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from daphne.utils import parse_x_forwarded_for
from django.test import Client

from tests import factories
from tests.inbox.tenants import PASSWORD

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NGINX_ADDRESS = "172.18.0.9"  # nginx's own address on compose's network
TRUE = {"1", "true", "yes", "on"}  # inbox.site.settings.env_bool


@dataclass
class Block:
    """One `{ … }` of nginx's configuration: its own name and arguments, its simple directives,
    the blocks inside it."""

    args: list[str]
    directives: list[list[str]] = field(default_factory=list)
    children: list[Block] = field(default_factory=list)


def _nginx() -> Block:
    text = re.sub(r"#[^\n]*", "", (DEPLOY / "nginx.conf").read_text())
    root = Block([])
    stack = [root]
    words: list[str] = []
    for token in re.findall(r"\"[^\"]*\"|'[^']*'|[{};]|[^\s{};]+", text):
        if token == "{":
            stack.append(Block(words))
            stack[-2].children.append(stack[-1])
            words = []
        elif token == "}":
            stack.pop()
        elif token == ";":
            stack[-1].directives.append(words)
            words = []
        else:
            words.append(token.strip("\"'"))
    return root


def _proxied_locations() -> list[tuple[list[Block], Block]]:
    """Each location of the TLS server that passes requests on, with its enclosing blocks."""
    (http,) = [block for block in _nginx().children if block.args == ["http"]]
    (tls,) = [
        block
        for block in http.children
        if block.args == ["server"] and ["listen", "443", "ssl"] in block.directives
    ]
    return [
        ([http, tls], location)
        for location in tls.children
        if location.args[0] == "location"
        and any(words[0] == "proxy_pass" for words in location.directives)
    ]


def _headers(outer: list[Block], location: Block) -> dict[str, str]:
    """The headers nginx sets for this location: proxy_set_header is inherited from the nearest
    level that has any, and only from there."""
    for level in (location, *reversed(outer)):
        found = {words[1]: words[2] for words in level.directives if words[0] == "proxy_set_header"}
        if found:
            return found
    return {}


def _through_the_shipped_deployment(
    client: str, forged: str = "", app_reads_proxy_headers: bool = True
) -> dict[str, str]:
    """The request META Django gets from a client at `client` (sending `X-Forwarded-For:
    forged`, if any) through nginx and daphne as deploy/ runs them (or, with
    `app_reads_proxy_headers` False, an app server that leaves nginx's address in REMOTE_ADDR:
    daphne without --proxy-headers, as in a hand-written unit)."""
    ((outer, root),) = [(o, loc) for o, loc in _proxied_locations() if loc.args[1:] == ["/"]]
    rule = _headers(outer, root)["X-Forwarded-For"]
    if rule == "$remote_addr":
        forwarded = client
    elif rule == "$proxy_add_x_forwarded_for":
        forwarded = f"{forged}, {client}" if forged else client
    else:
        raise AssertionError(f"unknown X-Forwarded-For rule {rule}")
    remote = NGINX_ADDRESS
    if app_reads_proxy_headers and "--proxy-headers" in _compose_web()["command"]:
        (remote, _port), _scheme = parse_x_forwarded_for(
            {b"x-forwarded-for": [forwarded.encode()]}, original_addr=[NGINX_ADDRESS, 443]
        )
    return {"REMOTE_ADDR": remote, "HTTP_X_FORWARDED_FOR": forwarded}


def _compose_web() -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    web: dict[str, Any] = compose["services"]["web"]
    return web


def _env_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs if not key.startswith("#")}


def test_nginx_overwrites_the_forwarded_address_in_every_location_it_proxies() -> None:
    locations = _proxied_locations()
    assert {tuple(location.args[1:]) for _, location in locations} >= {("/",), ("/ws/",)}
    for outer, location in locations:
        headers = _headers(outer, location)
        assert headers.get("X-Forwarded-For") == "$remote_addr", location.args
        assert headers.get("X-Real-IP") == "$remote_addr", location.args
        assert headers.get("Host") == "$host", location.args
        assert headers.get("X-Forwarded-Proto") == "$scheme", location.args


def test_compose_systemd_and_the_env_example_trust_the_forwarded_address() -> None:
    unit = (DEPLOY / "systemd" / "daphne@.service").read_text()

    assert str(_compose_web()["environment"]["LOGIN_TRUST_X_FORWARDED_FOR"]).lower() in TRUE
    assert "Environment=LOGIN_TRUST_X_FORWARDED_FOR=1" in unit.splitlines()
    assert _env_file(DEPLOY / "inbox.env.example")["LOGIN_TRUST_X_FORWARDED_FOR"] in TRUE


@pytest.fixture
def deployed(settings: Any) -> Any:
    """The web processes' settings as compose sets them, and the user anna."""
    trust = str(_compose_web()["environment"].get("LOGIN_TRUST_X_FORWARDED_FOR", "0"))
    settings.LOGIN_TRUST_X_FORWARDED_FOR = trust.lower() in TRUE
    settings.LOGIN_MAX_FAILURES_PER_ADDRESS = 10  # 50 in production: fewer requests, same rule
    return factories.manager(factories.business(), username="anna")


def _login(
    client: str, username: str, password: str, forged: str = "", proxy_headers: bool = True
) -> Any:
    meta = _through_the_shipped_deployment(client, forged, proxy_headers)
    browser = Client(
        REMOTE_ADDR=meta["REMOTE_ADDR"], HTTP_X_FORWARDED_FOR=meta["HTTP_X_FORWARDED_FOR"]
    )
    return browser.post("/accounts/login/", {"username": username, "password": password})


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("proxy_headers", [True, False], ids=["daphne-as-compose", "plain-app"])
def test_one_clients_failures_do_not_lock_out_another_client(
    deployed: Any, proxy_headers: bool
) -> None:
    for n in range(10):
        _login("203.0.113.5", f"guess{n}", "wrong", proxy_headers=proxy_headers)

    locked = _login("203.0.113.5", "anna", PASSWORD, proxy_headers=proxy_headers)
    assert "Too many failed attempts" in locked.content.decode()
    assert _login("203.0.113.6", "anna", PASSWORD, proxy_headers=proxy_headers).status_code == 302


@pytest.mark.django_db(transaction=True)
def test_a_client_that_forges_x_forwarded_for_is_still_counted_under_its_own_address(
    deployed: Any,
) -> None:
    for n in range(5):
        _login("203.0.113.7", "anna", "wrong", forged=f"198.51.100.{n}")

    refused = _login("203.0.113.7", "anna", PASSWORD, forged="198.51.100.99")

    assert "Too many failed attempts" in refused.content.decode()
    assert _login("203.0.113.8", "anna", PASSWORD).status_code == 302
