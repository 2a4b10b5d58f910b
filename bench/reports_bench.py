"""How long the reports page takes for a large business, on PostgreSQL.

    .venv/bin/python bench/reports_bench.py [--chats 100000] [--messages-per-chat 20]
        [--days 365] [--repeat 5] [--out bench/results/reports.json] [--no-migrate] [--reuse]

Seeds one business ("Reports bench": two channels, three managers) with `--chats` chats and
`--chats × --messages-per-chat` messages spread over `--days` days, straight in SQL
(generate_series, no ORM): every fifth chat handed off (six reasons), four in five of those
answered by a manager after 0–59 min, voice notes with varied confidence, one turn per chat (every
seventh outside the knowledge base). Then VACUUM ANALYZE, and the page is rendered through the
Django test client as a logged-in admin: the default range (last 30 days), 90 days, and one
channel over 30 days. The figure is the median of `--repeat` renders after one warm-up.
The business's earlier rows are deleted first, so a rerun measures the same data.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

BUSINESS = "Reports bench"
REASONS = "ARRAY['asks_for_human','ready_to_buy','outside_knowledge_base','guardrail','complaint','voice_unclear']"  # noqa: E501


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=100_000)
    parser.add_argument("--messages-per-chat", type=int, default=20)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--no-migrate", action="store_true")
    parser.add_argument(
        "--reuse", action="store_true", help="keep an earlier seed of the same size (no reseed)"
    )
    return parser


def _clear(cursor: Any, channel_ids: list[int]) -> None:
    ids = ",".join(str(i) for i in channel_ids) or "0"
    chats = f"SELECT id FROM inbox_chat WHERE channel_id IN ({ids})"
    for table in ("inbox_turn", "inbox_handoff", "inbox_ownershiptransition"):
        cursor.execute(f"DELETE FROM {table} WHERE chat_id IN ({chats})")
    cursor.execute(f"DELETE FROM inbox_message WHERE channel_id IN ({ids})")
    cursor.execute(f"DELETE FROM inbox_chat WHERE channel_id IN ({ids})")


def seed(chats: int, per_chat: int, days: int, *, reuse: bool = False) -> dict[str, Any]:
    """The business, its people, and the history in a handful of INSERT … SELECT statements."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from inbox.conversations.models import Business, Channel, Chat, Membership

    business, _ = Business.objects.get_or_create(
        name=BUSINESS, defaults={"timezone": "Europe/Moscow"}
    )
    channels = [
        Channel.objects.get_or_create(business=business, name=name, defaults={"kind": "bridge"})[0]
        for name in ("Bench shop", "Bench web")
    ]
    users = get_user_model()
    people = []
    for username, role in (
        ("bench_admin", "admin"),
        ("bench_m1", "manager"),
        ("bench_m2", "manager"),
        ("bench_m3", "manager"),
    ):
        user = users.objects.filter(username=username).first() or users.objects.create_user(
            username=username, password="bench-only"
        )
        Membership.objects.get_or_create(user=user, business=business, defaults={"role": role})
        people.append(user)
    ch1, ch2 = channels[0].pk, channels[1].pk
    m1, m2, m3 = (u.pk for u in people[1:])
    started = time.perf_counter()
    seeded = Chat.objects.filter(channel_id__in=[ch1, ch2]).count()
    if reuse and seeded == chats:
        return _seeded(business.pk, ch1, people[0], chats, 0.0, 0.0)
    with transaction.atomic(), connection.cursor() as cursor:
        _clear(cursor, [ch1, ch2])
        # t0 of chat i: i % days days ago, at minute (i * 37) % 1440 of that day.
        cursor.execute(
            f"""
            INSERT INTO inbox_chat (channel_id, customer_key, customer_phone, customer_name,
                customer_bsuid, customer_username,
                owner, version, answered_up_to, customer_messages, status, created_at,
                last_message_at,
                owner_changed_at, last_customer_at, last_manager_at, assigned_to_id)
            SELECT CASE WHEN i % 3 = 0 THEN {ch2} ELSE {ch1} END, i::text, '', 'Bench ' || i,
                '', '',
                CASE WHEN i % 25 = 0 THEN 'pending_human' WHEN i % 5 = 0 THEN 'human'
                     ELSE 'bot' END,
                1, 0, {per_chat // 2}, 'open', t0, t0 + interval '1 hour', NULL, NULL, NULL, NULL
            FROM (SELECT i, date_trunc('day', now()) - (i % {days}) * interval '1 day'
                         + ((i * 37) % 1440) * interval '1 minute' AS t0
                  FROM generate_series(1, {chats}) i) s
            """
        )
        base = f"""
            SELECT c.id AS chat_id, c.channel_id, c.customer_key::int AS i, c.created_at AS t0
            FROM inbox_chat c WHERE c.channel_id IN ({ch1}, {ch2})
        """
        # Message j: even = the customer (every sixth a voice note), odd = the bot, or a manager
        # (j >= 6) in an answered handoff chat, 0-59 min later than the bot would have been.
        cursor.execute(
            f"""
            INSERT INTO inbox_message (chat_id, channel_id, direction, author, sent_by_id, from_me,
                sent_by_bot, kind, text, media_ref, media_mime, media_sha256, media_filename,
                media_file, transcript, transcript_status, transcript_confidence,
                transcript_language, transcript_segments, provider_message_id, status, status_at,
                error_code, error_title, payload, provider_timestamp, created_at, purged_at)
            SELECT b.chat_id, b.channel_id,
                CASE WHEN j % 2 = 0 THEN 'in' ELSE 'out' END,
                CASE WHEN j % 2 = 0 THEN 'customer' WHEN manager THEN 'manager' ELSE 'bot' END,
                CASE WHEN manager THEN (ARRAY[{m1},{m2},{m3}])[1 + b.i % 3] END,
                j % 2 = 1, j % 2 = 1 AND NOT manager,
                CASE WHEN j % 6 = 2 THEN 'voice' ELSE 'text' END,
                'message ' || j || ' of chat ' || b.i, '', '', '', '', '',
                '', CASE WHEN j % 6 = 2 THEN 'done' ELSE '' END,
                CASE WHEN j % 6 = 2 THEN ((b.i * 7 + j) % 100) / 100.0 END,
                '', '[]'::jsonb, '', 'sent', NULL, '', '', '{{}}'::jsonb, NULL,
                b.t0 + j * interval '3 minutes'
                    + CASE WHEN manager THEN (b.i % 60) * interval '1 minute' ELSE interval '0' END,
                NULL
            FROM ({base}) b CROSS JOIN generate_series(0, {per_chat - 1}) j
            CROSS JOIN LATERAL (SELECT j % 2 = 1 AND j >= 6 AND b.i % 5 = 0
                                       AND b.i % 25 <> 0 AS manager) m
            """
        )
        cursor.execute(
            f"""
            INSERT INTO inbox_handoff (chat_id, reason, summary, facts, message_to_customer,
                details, created_at)
            SELECT chat_id, ({REASONS})[1 + (i / 5) % 6], '', '{{}}'::jsonb, '', '{{}}'::jsonb,
                t0 + interval '13 minutes'
            FROM ({base}) b WHERE i % 5 = 0
            """
        )
        cursor.execute(
            f"""
            INSERT INTO inbox_ownershiptransition (chat_id, from_owner, to_owner, cause, reason,
                actor_id, actor_label, version, from_status, to_status, at)
            SELECT chat_id, 'bot', 'pending_human', 'request_human', '', NULL::integer, 'bot', 2,
                '', '',
                t0 + interval '13 minutes' FROM ({base}) b WHERE i % 5 = 0
            UNION ALL
            SELECT chat_id, 'pending_human', 'human', 'manager_replied', '',
                NULL::integer, 'manager', 3, '', '',
                t0 + interval '21 minutes' + (i % 60) * interval '1 minute'
            FROM ({base}) b WHERE i % 5 = 0 AND i % 25 <> 0
            """
        )
        cursor.execute(
            f"""
            INSERT INTO inbox_turn (chat_id, first_message_id, last_message_id,
                generated_at_version, outcome, backend, action, reason, decision,
                guardrail_findings, model_error, reply_message_id, started_at, finished_at,
                latency_ms)
            SELECT b.chat_id, m.id, m.id, 1,
                CASE WHEN b.i % 7 = 0 THEN 'clarified' ELSE 'answered' END, 'bench',
                CASE WHEN b.i % 7 = 0 THEN 'clarify' ELSE 'answer' END,
                CASE WHEN b.i % 7 = 0 THEN 'outside_knowledge_base' ELSE '' END,
                '{{}}'::jsonb, '[]'::jsonb, '', NULL, b.t0, b.t0, 100
            FROM ({base}) b JOIN LATERAL (
                SELECT id FROM inbox_message WHERE chat_id = b.chat_id ORDER BY id LIMIT 1
            ) m ON true
            """
        )
    seeded_s = time.perf_counter() - started
    started = time.perf_counter()
    with connection.cursor() as cursor:
        for table in (
            "inbox_chat",
            "inbox_message",
            "inbox_handoff",
            "inbox_ownershiptransition",
            "inbox_turn",
        ):
            cursor.execute(f"VACUUM ANALYZE {table}")
    return _seeded(business.pk, ch1, people[0], chats, seeded_s, time.perf_counter() - started)


def _seeded(
    business_id: int, channel_id: int, admin: Any, chats: int, seed_s: float, vacuum_s: float
) -> dict[str, Any]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM inbox_message m JOIN inbox_channel c ON c.id = m.channel_id"
            " WHERE c.business_id = %s",
            [business_id],
        )
        messages = cursor.fetchone()[0]
    return {
        "business_id": business_id,
        "channel_id": channel_id,
        "admin": admin,
        "chats": chats,
        "messages": messages,
        "seed_s": round(seed_s, 1),
        "vacuum_s": round(vacuum_s, 1),
    }


def time_page(client: Any, params: dict[str, Any], repeat: int) -> dict[str, Any]:
    client.get("/inbox/reports/", params)  # warm-up: connection, templates, plans
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get("/inbox/reports/", params)
        times.append(time.perf_counter() - started)
        assert response.status_code == 200, response.status_code
    report = response.context["report"]
    return {
        "median_ms": common.ms(statistics.median(times), 1),
        "max_ms": common.ms(max(times), 1),
        "conversations": report.summary.conversations,
        "handoffs": report.summary.handoffs,
        "first_reply_p50_s": report.first_reply.p50,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    common.setup_django()
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    if connection.vendor != "postgresql":
        raise SystemExit("reports_bench needs PostgreSQL (DATABASE_URL=postgres://…)")
    if not args.no_migrate:
        common.migrate()
    setup_test_environment()  # the test client's host and the response's context
    seeded = seed(args.chats, args.messages_per_chat, args.days, reuse=args.reuse)
    client = Client()
    client.force_login(seeded["admin"])
    today = date.today()
    business = seeded["business_id"]
    ranges = {
        "last_30_days": {"business": business},
        "last_90_days": {
            "business": business,
            "from": (today - timedelta(days=89)).isoformat(),
            "to": today.isoformat(),
        },
        "one_channel_30_days": {"business": business, "channel": seeded["channel_id"]},
    }
    pages = {name: time_page(client, params, args.repeat) for name, params in ranges.items()}
    return {
        "chats": seeded["chats"],
        "messages": seeded["messages"],
        "days": args.days,
        "seed_s": seeded["seed_s"],
        "vacuum_s": seeded["vacuum_s"],
        "pages": pages,
        "page_ms": pages["last_30_days"]["median_ms"],
        "machine": common.machine_info(),
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = run(args)
    if args.out:
        common.write_json(args.out, result)
    print(json.dumps({k: result[k] for k in ("chats", "messages", "seed_s", "pages")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
