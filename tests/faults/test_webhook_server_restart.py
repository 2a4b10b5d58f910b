"""A webhook server stopped in the middle of traffic, as a rolling restart or a scale-down stops it
(SIGTERM: `systemctl restart webhooks@…`, `docker compose up` with a new image). The requests it
has in hand are answered once their events are queued, and it takes no new ones; what it no
longer takes is delivered to the other server, as nginx's failover and WhatsApp's redelivery
do. Every message ends up stored exactly once, and none that it acknowledged is lost."""

from __future__ import annotations

import json
import signal
import sys
import threading

import httpx
import pytest

from inbox.conversations.models import Channel, Message
from tests import factories
from tests.emulators.graph_api import sign
from tests.faults.helpers import customer, fresh_phone_number_id, message_body
from tests.processes import LOG_DIR, ProcessGroup, ingest_drained, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

APP_SECRET = "restart-secret"
MESSAGES = 400
SENDERS = 4


def test_a_webhook_server_stopped_mid_traffic_loses_nothing_it_acknowledged(
    subprocess_env: dict[str, str],
) -> None:
    group = ProcessGroup({**subprocess_env, "WHATSAPP_APP_SECRET": APP_SECRET})
    pnid = fresh_phone_number_id()
    channel = factories.channel(kind=Channel.Kind.CLOUD_API, phone_number_id=pnid,
                                debounce_seconds=600)  # fmt: skip
    bodies = [
        (f"wamid.restart-{pnid}-{n}",
         message_body(pnid, customer(n % 40), f"message {n}: is the sofa still in stock?",
                      wamid=f"wamid.restart-{pnid}-{n}"))
        for n in range(MESSAGES)
    ]  # fmt: skip
    answered_by: dict[str, str] = {}
    lock = threading.Lock()
    sent = threading.Semaphore(0)
    log_a = LOG_DIR / "restart-hooks-a.log"
    log_start = len(log_a.read_text()) if log_a.exists() else 0
    try:
        first = group.start_webhook_server("restart-hooks-a")
        second = group.start_webhook_server("restart-hooks-b")
        group.start("restart-ingest", [sys.executable, "manage.py", "ingest_worker"])
        server_a = group.procs["restart-hooks-a"]

        def deliver(share: list[tuple[str, dict[str, object]]]) -> None:
            with httpx.Client(timeout=10) as client:
                for wamid, body in share:
                    raw = json.dumps(body).encode()
                    headers = {"X-Hub-Signature-256": sign(APP_SECRET, raw),
                               "Content-Type": "application/json"}  # fmt: skip
                    by = ""
                    for base, name in ((first, "a"), (second, "b"), (second, "b")):
                        try:
                            if client.post(f"{base}/webhooks/whatsapp/", content=raw,
                                           headers=headers).status_code == 200:  # fmt: skip
                                by = name
                                break
                        except httpx.TransportError:
                            continue  # refused or cut off: redelivered to the other server
                    with lock:
                        answered_by[wamid] = by
                    sent.release()

        threads = [
            threading.Thread(target=deliver, args=(bodies[n::SENDERS],)) for n in range(SENDERS)
        ]
        for thread in threads:
            thread.start()
        for _ in range(MESSAGES // 4):
            sent.acquire(timeout=60)
        group.stop("restart-hooks-a")  # SIGTERM, as systemd and compose stop it
        for thread in threads:
            thread.join(timeout=120)

        # A clean stop: uvicorn finished what it had in hand, then exited by the signal it got
        # (it re-raises it); a kill after the grace period would read -9.
        assert server_a.returncode == -signal.SIGTERM
        assert "Finished server process" in log_a.read_text()[log_start:]
        assert len(answered_by) == MESSAGES
        assert "" not in answered_by.values()  # every webhook got its 200 from one of them
        by_a = {wamid for wamid, by in answered_by.items() if by == "a"}
        print(f"\n[webhook restart] {len(by_a)} of {MESSAGES} answered by the stopped server")
        assert MESSAGES // 4 <= len(by_a) < MESSAGES  # the stop came in the middle of traffic
        wait_for(ingest_drained, 60, message="the consumer to store every event")
        stored = list(Message.objects.filter(chat__channel=channel).values_list(
            "provider_message_id", flat=True))  # fmt: skip
        assert len(stored) == MESSAGES
        assert set(stored) == set(answered_by)
    finally:
        group.stop_all()
