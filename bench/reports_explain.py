"""EXPLAIN ANALYZE of every query the reports page runs, on the database the bench seeded.

    .venv/bin/python bench/reports_explain.py [--days 30] [--channel] [--summary-only]

Needs `bench/reports_bench.py` to have seeded the "Reports bench" business in the same
DATABASE_URL (PostgreSQL). Prints each query's time and plan, slowest first.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import date, timedelta
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.reports_bench import BUSINESS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--channel", action="store_true", help="the first channel only")
    parser.add_argument("--plans", action="store_true", help="print the plans, not only times")
    args = parser.parse_args(argv)
    common.setup_django()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from inbox.conversations.models import Business
    from inbox.web.reports import figures, report

    business = Business.objects.get(name=BUSINESS)
    channel = business.channels.order_by("pk").first() if args.channel else None
    today = date.today()
    period = figures.period_for(
        business, today - timedelta(days=args.days - 1), today, channel, today=today
    )
    report.build(period)  # warm the caches
    with CaptureQueriesContext(connection) as captured:
        started = time.perf_counter()
        report.build(period)
        total = time.perf_counter() - started
    print(f"build(): {total * 1000:.1f} ms, {len(captured.captured_queries)} queries")
    found = []
    with connection.cursor() as cursor:
        for query in captured.captured_queries:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + query["sql"])
            plan = [row[0] for row in cursor.fetchall()]
            found.append((float(query["time"]) * 1000, query["sql"], plan))
    for ms, sql, plan in sorted(found, key=lambda f: -f[0]):
        print(f"\n=== {ms:.1f} ms: {' '.join(sql.split())[:300]}")
        print(plan[-1])
        if args.plans:
            print("\n".join(plan))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
