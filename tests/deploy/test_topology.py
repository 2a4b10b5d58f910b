"""The production topology in deploy/ matches the code: every Celery task lands on a queue that
some worker consumes (in compose and in the systemd instructions), beat runs once, websockets
pass through nginx, the model server gets a GPU. A queue without a worker is a silent outage:
its tasks wait in Redis forever. (No Docker engine here: the compose file is read, not run.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from django.urls import resolve

from inbox.site.celery import app
from integrations.whatsapp import webhooks

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _compose(name: str = "docker-compose.yml") -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / name).read_text())
    return loaded


def _option(command: list[str], flag: str) -> str | None:
    return command[command.index(flag) + 1] if flag in command else None


def _routed_queue(task_name: str) -> str:
    route = app.amqp.router.route({}, task_name)
    return str(route["queue"].name)


def test_every_task_lands_on_a_queue_a_compose_worker_consumes() -> None:
    app.loader.import_default_modules()
    services = _compose()["services"]
    consumed = {
        queue
        for service in services.values()
        if (command := service.get("command"))
        and command[:4] == ["celery", "-A", "inbox", "worker"]
        for queue in (_option(command, "-Q") or "").split(",")
    }
    ours = [name for name in app.tasks if not name.startswith("celery.")]

    assert len(ours) > 10
    unserved = {name: _routed_queue(name) for name in ours if _routed_queue(name) not in consumed}
    assert unserved == {}
    assert consumed == {queue.name for queue in app.conf.task_queues}


def test_systemd_instructions_start_a_worker_for_every_queue_and_one_beat() -> None:
    docs = (DEPLOY.parent / "docs" / "deploy.md").read_text()
    started = set(re.findall(r"celery-worker@(\w+)", docs))

    assert {queue.name for queue in app.conf.task_queues} <= started
    assert "-Q %i" in (DEPLOY / "systemd" / "celery-worker@.service").read_text()
    assert (DEPLOY / "systemd" / "celery-beat.service").exists()
    assert not (DEPLOY / "systemd" / "celery-beat@.service").exists()


def test_compose_runs_exactly_one_beat_and_the_ingest_consumer() -> None:
    services = _compose()["services"]
    beats = [name for name, s in services.items() if s.get("command", [])[3:4] == ["beat"]]
    consumers = [n for n, s in services.items() if "ingest_worker" in s.get("command", [])]

    assert beats == ["beat"]
    assert "replicas" not in services["beat"].get("deploy", {})
    assert consumers == ["ingest"]
    assert services["web"]["deploy"]["replicas"] >= 2
    for name in ("web", "ingest", "worker-assistant", "beat"):
        assert services[name]["restart"] == "unless-stopped"  # workers may exit on a Redis drop


def test_redis_keeps_acknowledged_webhooks_across_a_restart() -> None:
    command = _compose()["services"]["redis"]["command"]

    assert _option(command, "--appendonly") == "yes"
    assert _option(command, "--maxmemory-policy") == "noeviction"


def test_nginx_upgrades_websockets_and_the_model_server_reserves_a_gpu() -> None:
    nginx = (DEPLOY / "nginx.conf").read_text()
    ws = nginx[nginx.index("location /ws/") :]
    ws = ws[: ws.index("}")]
    vllm = _compose("vllm/compose.yaml")["services"]["vllm"]
    (device,) = vllm["deploy"]["resources"]["reservations"]["devices"]

    assert "proxy_set_header Upgrade $http_upgrade;" in ws
    assert "proxy_http_version 1.1;" in nginx
    assert device["capabilities"] == ["gpu"]
    assert _compose()["services"]["vllm"]["profiles"] == ["gpu"]


def test_nginx_sends_webhooks_to_the_webhook_servers_that_compose_and_systemd_run() -> None:
    nginx = (DEPLOY / "nginx.conf").read_text()
    regex = re.search(r"location ~ (\S+) \{([^}]*)\}", nginx)
    assert regex is not None
    whatsapp, block = re.compile(regex.group(1)), regex.group(2)
    other = nginx[nginx.index("location /webhooks/ {") :]
    other = other[: other.index("}")]
    upstream = nginx[nginx.index("upstream webhooks") :]
    upstream = upstream[: upstream.index("}")]
    service = _compose()["services"]["webhooks"]
    unit = (DEPLOY / "systemd" / "webhooks@.service").read_text()
    docs = (DEPLOY.parent / "docs" / "deploy.md").read_text()

    # What nginx sends to the webhook servers is exactly what they serve; the CRM's events,
    # a Django view, stay on daphne.
    for path in (
        "/webhooks/whatsapp/",
        "/webhooks/whatsapp",
        "/webhooks/bridge/12/",
        "/webhooks/waha/12/",
    ):
        assert webhooks.route(path) is not None
        assert whatsapp.match(path), path
    for path in ("/webhooks/bitrix24/", "/webhooks/whatsappx/"):
        assert webhooks.route(path) is None
        assert not whatsapp.match(path), path
    assert resolve("/webhooks/bitrix24/").url_name == "bitrix24_events"
    assert "proxy_pass http://webhooks;" in block
    assert "proxy_request_buffering off;" in block
    assert "proxy_pass http://daphne;" in other
    port = re.search(r"server webhooks:(\d+)", upstream)
    assert port is not None
    assert port.group(1) == _option(service["command"], "-p")
    assert service["command"][:3] == ["python", "-m", "inbox.site.webhook_server"]
    assert service["deploy"]["replicas"] >= 2
    assert service["restart"] == "unless-stopped"
    assert "-m inbox.site.webhook_server" in unit
    assert "-p %i" in unit
    assert re.search(r"webhooks@\d+", docs)
    # The sockets and pages stay on daphne.
    assert "proxy_pass http://daphne;" in nginx[nginx.index("location /ws/") :]
