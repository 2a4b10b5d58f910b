"""The whole sync with real processes: Celery workers (4 pool processes on 2 nodes), daphne
serving /webhooks/bitrix24/, and the emulated portal posting its events to it over HTTP."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime

import pytest
from django.db import transaction

from inbox.conversations.models import Channel, Chat, Handoff, Message
from inbox.platform.redis import get_redis
from inbox.site.embedded_redis import free_port
from integrations.bitrix24 import hooks
from integrations.bitrix24.inbound import reconcile
from integrations.bitrix24.models import Bitrix24Settings, ConnectorMessage, CrmLink, PendingPull
from integrations.bitrix24.openlines import imconnector
from tests import factories
from tests.emulators.bitrix24 import Bitrix24Emulator
from tests.emulators.graph_api import GraphApiEmulator
from tests.integrations.bitrix24.conftest import connect, fast_env
from tests.processes import LOG_DIR, ProcessGroup, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
WORKERS = ("b24-worker-1", "b24-worker-2")
STORM_SECONDS = 60.0


@pytest.fixture(scope="module")
def graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        yield emulator


@pytest.fixture(scope="module")
def stack(subprocess_env: dict[str, str], graph: GraphApiEmulator) -> Iterator[dict[str, str]]:
    port = free_port()
    env = {
        **fast_env(),
        "WHATSAPP_GRAPH_URL": graph.graph_url,
        "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
    }
    group = ProcessGroup({**subprocess_env, **env})
    try:
        yield {"web": _start(group, port)}
    finally:
        group.stop_all()


def _start(group: ProcessGroup, port: int) -> str:
    for name in WORKERS:
        (LOG_DIR / f"{name}.log").unlink(missing_ok=True)
        group.start(
            name,
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "inbox",
                "worker",
                "--loglevel",
                "INFO",
                "-Q",
                "integrations",
                "--concurrency",
                "2",
                "--hostname",
                f"{name}@%h",
                "--without-gossip",
                "--without-mingle",
            ],
        )
    for name in WORKERS:
        log = LOG_DIR / f"{name}.log"
        wait_for(
            lambda log=log: log.exists() and b" ready." in log.read_bytes(),
            90,
            0.2,
            f"{name} to be ready",
        )
    return group.start_daphne("b24-web", port)


def _quiet(portal: Bitrix24Emulator) -> bool:
    """Every event delivered, no task queued or running, no sync work left."""
    redis = get_redis()
    portal.wait_events()
    return (
        redis.llen("integrations") == 0
        and redis.hlen("unacked") == 0
        and not CrmLink.objects.filter(needs_sync=True).exists()
        and not PendingPull.objects.exists()
    )


def _idle(portal: Bitrix24Emulator, hold: float = 0.3) -> Callable[[], bool]:
    """A poll for `wait_for`: quiet at every look for `hold` seconds in a row (a task moves
    from the queue to `unacked` in two steps, so one quiet look can fall between them)."""
    quiet_since: float | None = None

    def idle() -> bool:
        nonlocal quiet_since
        if not _quiet(portal):
            quiet_since = None
            return False
        now = time.monotonic()
        if quiet_since is None:
            quiet_since = now
        return now - quiet_since >= hold

    return idle


def _read_back(portal: Bitrix24Emulator, entity_id: int, since: int) -> bool:
    return any(
        str(entity_id) in [str(i) for i in (e.params.get("filter") or {}).get("@id", [])]
        for e in portal.executed[since:]
    )


def _most_tasks_at_once(business_id: int) -> int:
    """From the workers' JSON logs: how many push tasks were syncing chats at the same moment
    (a prefork process runs one task at a time, so overlapping tasks ran in different ones)."""
    spans: dict[tuple[str, str], tuple[float, float]] = {}
    for name in WORKERS:
        for line in (LOG_DIR / f"{name}.log").read_text().splitlines():
            if '"bitrix24.chat_synced"' not in line or not line.startswith("{"):
                continue
            record = json.loads(line)
            if record.get("business_id") != business_id:
                continue
            at = datetime.fromisoformat(record["timestamp"]).timestamp()
            key = (name, str(record.get("correlation_id")))
            first, last = spans.get(key, (at, at))
            spans[key] = (min(first, at), max(last, at))
    edges = sorted([(a, 1) for a, _ in spans.values()] + [(b, -1) for _, b in spans.values()],
                   key=lambda edge: (edge[0], -edge[1]))  # fmt: skip
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def _new_chats(channel: Channel, count: int) -> list[Chat]:
    with transaction.atomic():
        chats = Chat.objects.bulk_create(
            Chat(
                channel=channel,
                customer_key=f"7702{i:07d}",
                customer_phone=f"7702{i:07d}",
                customer_name=f"Customer {i}",
            )
            for i in range(count)
        )
        for chat in chats:
            hooks.chat_created(chat.pk)
    return chats


def test_a_burst_of_500_chats_from_4_workers_stays_inside_the_bucket_and_loses_nothing(
    stack: dict[str, str],
) -> None:
    with Bitrix24Emulator(rate=10, burst=20) as portal:
        cfg = connect(portal)
        channel = factories.channel(cfg.business, kind="bridge")
        started = time.monotonic()

        _new_chats(channel, 500)
        created = time.monotonic() - started
        wait_for(_idle(portal), timeout=180, interval=0.5, message="500 chats synced")
        elapsed = time.monotonic() - started
        first, last = portal.requests[0]["t"], portal.requests[-1]["t"]

        assert portal.bucket_rejections == 0
        assert portal.max_level <= portal.burst
        phones = [e["value"] for c in portal.contacts() for e in c["fm"]]
        assert len(phones) == len(set(phones)) == 500
        deals = portal.deals()
        assert len(deals) == 500
        assert sorted(d["contactId"] for d in deals) == sorted(c["id"] for c in portal.contacts())
        assert len(portal.comments) == 500
        assert (
            CrmLink.objects.filter(
                entity_id__isnull=False, link_comment_id__isnull=False, needs_sync=False
            ).count()
            == 500
        )
        for name in WORKERS:
            assert portal.webhook_code not in (LOG_DIR / f"{name}.log").read_text()
        # The work really was shared: tasks of different workers overlapped. (Three at once held
        # on an idle machine; on a loaded CI runner the fourth worker can start late.)
        assert _most_tasks_at_once(cfg.business_id) >= 2
        print(
            f"\n500 chats: created in {created:.1f}s, synced after {elapsed:.1f}s; "
            f"CRM requests from first to last {last - first:.1f}s; "
            f"{len(portal.requests)} requests, "
            f"max bucket level {portal.max_level:.1f}/{portal.burst}"
        )


@pytest.mark.timeout(480)
def test_a_503_storm_delays_the_sync_drops_nothing_and_the_limit_holds_afterwards(
    stack: dict[str, str],
) -> None:
    # A minute of 503 QUERY_LIMIT_EXCEEDED: every sync job uses up its attempts, goes back to
    # the queue to be retried later, and tries again until the portal answers.
    with Bitrix24Emulator(rate=10, burst=20) as portal:
        cfg = connect(portal)
        channel = factories.channel(cfg.business, kind="bridge")
        portal.storm(STORM_SECONDS)
        storm_end = time.time() + STORM_SECONDS

        _new_chats(channel, 60)
        # Every put-off chat has a run coming back for it (nothing waits for the periodic
        # sweep, which this stack does not run): the sync resumes within seconds of the end.
        wait_for(_idle(portal), timeout=STORM_SECONDS + 60, interval=0.5,
                 message="60 chats synced")  # fmt: skip

        assert portal.storm_rejections > 0
        assert portal.bucket_rejections == 0  # no thundering herd when the storm ended
        after = [r for r in portal.requests if r["t"] > storm_end]
        assert after
        assert all(r.get("error") is None for r in after)
        assert len(portal.deals()) == len(portal.contacts()) == len(portal.comments) == 60


def test_a_deal_we_write_and_its_echo_end_the_loop_in_one_step(stack: dict[str, str]) -> None:
    with Bitrix24Emulator() as portal:
        token = portal.add_outgoing_webhook(
            f"{stack['web']}/webhooks/bitrix24/",
            ["ONCRMDEALADD", "ONCRMDEALUPDATE", "ONCRMCONTACTADD", "ONCRMCONTACTUPDATE"],
        )
        cfg = connect(portal, application_token=token, pipeline_id=3, handoff_stage="C3:HANDOFF")
        chat = factories.chat(
            factories.channel(cfg.business, kind="bridge"), customer_phone="77003334455"
        )
        with transaction.atomic():
            hooks.chat_created(chat.pk)
        wait_for(_idle(portal), timeout=60, interval=0.2)
        since = len(portal.executed)
        with transaction.atomic():
            handoff = Handoff.objects.create(chat=chat, reason="complaint", summary="Late order")
            hooks.handoff_created(handoff.pk)
        link = CrmLink.objects.get(chat=chat)
        wait_for(lambda: _read_back(portal, link.entity_id, since), timeout=60)
        wait_for(_idle(portal), timeout=60, interval=0.2)

        delivered = [d.event for d in portal.deliveries if d.outcome == "delivered"]
        assert sorted(delivered) == ["ONCRMCONTACTADD", "ONCRMDEALADD", "ONCRMDEALUPDATE"]
        assert sorted(w.method for w in portal.writes()) == [
            "crm.item.add",
            "crm.item.add",
            "crm.item.update",
            "crm.timeline.comment.add",
            "crm.timeline.comment.add",
        ]
        link.refresh_from_db()
        assert (link.stage_id, link.stage_semantics) == ("C3:HANDOFF", "in_progress")


def test_an_event_lost_in_transit_is_caught_by_reconciliation(stack: dict[str, str]) -> None:
    with Bitrix24Emulator() as portal:
        token = portal.add_outgoing_webhook(
            f"{stack['web']}/webhooks/bitrix24/", ["ONCRMDEALUPDATE"]
        )
        cfg = connect(portal, application_token=token, pipeline_id=3)
        chat = factories.chat(
            factories.channel(cfg.business, kind="bridge"), customer_phone="77006667788"
        )
        with transaction.atomic():
            hooks.chat_created(chat.pk)
        wait_for(_idle(portal), timeout=60, interval=0.2)
        link = CrmLink.objects.get(chat=chat)

        portal.lose_events(1, event="ONCRMDEALUPDATE")
        portal.set_item(2, link.entity_id, by_user=27, stageId="C3:WON")
        portal.wait_events()
        assert [d.outcome for d in portal.deliveries] == ["lost"]
        assert CrmLink.objects.get(chat=chat).stage_semantics == "in_progress"

        from integrations.bitrix24 import tasks

        tasks.reconcile_all.delay()
        wait_for(lambda: CrmLink.objects.get(chat=chat).stage_semantics == "won", timeout=60)
        assert reconcile.reconcile(cfg.business_id).applied == 0  # already applied: no change


def test_an_operator_reply_from_open_channels_reaches_whatsapp_and_is_acknowledged(
    stack: dict[str, str], graph: GraphApiEmulator
) -> None:
    with Bitrix24Emulator() as portal:
        from integrations.bitrix24.setup import config

        biz = factories.business()
        cfg = config.configure(
            biz,
            mode="app",
            portal_url=portal.base_url,
            client_id=portal.app_client_id,
            client_secret=portal.app_client_secret,
            connector_id="wa_inbox",
            line_id="107",
            sync_open_channels=True,
            rate_limit=portal.rate,
            burst=portal.burst,
        )
        Bitrix24Settings.objects.filter(pk=cfg.pk).update(oauth_server_url=portal.base_url)
        graph.register_number("106540352299999", "tok-b24")
        channel = factories.channel(
            biz,
            kind=Channel.Kind.CLOUD_API,
            phone_number_id="106540352299999",
            access_token="tok-b24",
        )
        chat = factories.chat(
            channel,
            customer_key="77011112233",
            customer_phone="77011112233",
            customer_name="Ivan Petrov",
        )
        assert portal.install_app(f"{stack['web']}/webhooks/bitrix24/") == 200
        wait_for(lambda: Bitrix24Settings.objects.get(pk=cfg.pk).installed_at, timeout=60)
        assert "ONIMCONNECTORMESSAGEADD" in {s.event for s in portal.subscriptions}

        with transaction.atomic():
            message = factories.customer_message(chat, "Do you deliver to Astana?")
            hooks.customer_message(message.pk)
        wait_for(lambda: portal.connector_messages, timeout=60)
        external = imconnector.external_chat_id(chat)
        assert portal.connector_messages[0]["text"] == "Do you deliver to Astana?"

        im = portal.operator_reply(external, "[b]Klaus Weber:[/b] [br]Yes, in 2 days.")
        wait_for(lambda: portal.deliveries_acked, timeout=60)

        (sent,) = graph.sent_to("77011112233")
        assert sent.text == "*Klaus Weber:*\nYes, in 2 days."
        (ack,) = portal.deliveries_acked
        assert ack["im"] == {"chat_id": str(im["chat_id"]), "message_id": str(im["message_id"])}
        reply = Message.objects.get(chat=chat, direction=Message.Direction.OUTBOUND)
        assert ack["message"]["id"] == [reply.provider_message_id]
        assert reply.payload.get("source") == "bitrix24"
        # Marked once the portal answered the acknowledgement, a moment after it received it.
        wait_for(
            lambda: ConnectorMessage.objects.get(direction="from_bitrix").state == "acked",
            timeout=10,
        )

        # The same event delivered again never sends twice.
        from integrations.bitrix24 import tasks

        tasks.operator_replies.delay(
            cfg.business_id,
            [
                {
                    "im_chat_id": str(im["chat_id"]),
                    "im_message_id": str(im["message_id"]),
                    "user_id": "27",
                    "text": "[b]Klaus Weber:[/b] [br]Yes, in 2 days.",
                    "chat_id": external,
                }
            ],
        )
        wait_for(_idle(portal), timeout=30, interval=0.2)
        assert len(graph.sent_to("77011112233")) == 1
        assert len(portal.deliveries_acked) == 1
