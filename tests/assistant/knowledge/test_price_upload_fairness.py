"""One tenant's spreadsheet never stalls another tenant's bot: price-list files are parsed on the
`bulk` queue by a pool of their own (never the `assistant` workers, never the web process), one
parse per business at a time (a newer upload stops the one still being read, on a real prefork
worker), and a sheet that declares more rows or columns than are ever read is refused before
openpyxl reads it."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from django.urls import reverse

from assistant.knowledge import price_upload
from assistant.knowledge.price_import import parse_price_file
from bench.fair_workers import slow_xlsx
from inbox.conversations.models import Job, Membership
from inbox.site.celery import app
from tests import factories
from tests.processes import ProcessGroup, wait_for

GOOD = b"sku,name,price,currency\nT1,Oak table,120000,KZT\nC1,Chair,15000,KZT\n"


def _parsing_on_a_worker(token: str) -> bool:
    """A worker process is running this upload's parse (Celery's remote inspection)."""
    active = app.control.inspect(timeout=1.0).active() or {}
    return any(token in str(task["args"]) for tasks in active.values() for task in tasks)


@pytest.mark.django_db
def test_price_parsing_and_replays_are_queued_for_the_bulk_pool_not_the_bot(
    redis_client: Any,
) -> None:
    business = factories.business()
    admin = factories.manager(business, role=Membership.Role.ADMIN)

    price_upload.submit(GOOD, "prices.csv", "KZT", business_id=business.pk, channel_id=None,
                        user=admin)  # fmt: skip

    assert (redis_client.llen("bulk"), redis_client.llen("assistant")) == (1, 0)
    assert app.amqp.router.route({}, "assistant.replay")["queue"].name == "bulk"
    assert app.amqp.router.route({}, "assistant.run_turn")["queue"].name == "assistant"


@pytest.mark.django_db
def test_a_sheet_declaring_more_rows_or_columns_than_are_read_is_refused_before_reading() -> None:
    # The body alone takes openpyxl ~10 s; the declared size refuses it in milliseconds.
    started = time.monotonic()
    rows = parse_price_file(slow_xlsx(1000, dimension="A1:C1048576"), "huge.xlsx", "KZT")
    columns = parse_price_file(slow_xlsx(1000, dimension="A1:XFD3"), "wide.xlsx", "KZT")
    elapsed = time.monotonic() - started

    assert rows.rows == columns.rows == ()
    assert "declares 1,048,576 rows, more than the 60,000 read" in str(rows.errors[0])
    assert "declares 16,384 columns" in str(columns.errors[0])
    assert elapsed < 5
    fine = parse_price_file(slow_xlsx(0, dimension="A1:C2"), "fine.xlsx", "KZT")
    assert [row.name for row in fine.rows] == ["Oak table"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(240)
def test_a_newer_upload_stops_the_parse_still_running_for_that_business(
    processes: ProcessGroup,
) -> None:
    # One bulk process: the second upload is read only if the first one's parse is stopped
    # (unstopped, it reads its ~60 s of cells until the time limit).
    processes.start_celery_worker("bulk-only", queues="bulk", concurrency=1)
    business = factories.business()
    first_admin = factories.manager(business, role=Membership.Role.ADMIN)
    second_admin = factories.manager(business, role=Membership.Role.ADMIN)
    first = price_upload.submit(slow_xlsx(6000), "slow.xlsx", "KZT", business_id=business.pk,
                                channel_id=None, user=first_admin)  # fmt: skip
    wait_for(lambda: _parsing_on_a_worker(first), timeout=60, interval=0.2,
             message="the first parse")  # fmt: skip

    second = price_upload.submit(GOOD, "prices.csv", "KZT", business_id=business.pk,
                                 channel_id=None, user=second_admin)  # fmt: skip

    def ready() -> price_upload.StagedUpload | None:
        if price_upload.parsing(second, second_admin):
            return None
        return price_upload.take(second, second_admin)

    staged = wait_for(ready, timeout=30, interval=0.2, message="the second upload's preview")
    assert [row.name for row in staged.preview.rows] == ["Oak table", "Chair"]
    replaced = price_upload.take(first, first_admin)
    assert replaced is not None
    assert replaced.preview.rows == ()
    assert "replaced by a newer upload" in str(replaced.preview.errors[0])
    job = Job.objects.get(pk=replaced.job_id)
    assert (job.state, job.last_error) == (Job.State.FAILED, price_upload.REPLACED)
    wait_for(lambda: not default_storage.exists(price_upload._file_name(first)), timeout=10,
             message="the replaced file deleted by its stopped parse")  # fmt: skip
    assert not _parsing_on_a_worker(first)
    client = Client()
    client.force_login(first_admin)
    page = client.get(f"{reverse('settings_price_list')}?upload={first}").content.decode()
    assert "replaced by a newer upload" in page
    # The worker process survived the stop and still parses.
    third = price_upload.submit(GOOD, "again.csv", "KZT", business_id=business.pk,
                                channel_id=None, user=first_admin)  # fmt: skip
    wait_for(lambda: price_upload.take(third, first_admin), timeout=30, message="a third parse")


@pytest.mark.django_db
def test_the_django_admin_import_parses_nothing_in_the_web_process() -> None:
    # Its URL leads to the settings page, whose upload a bulk worker reads (submit).
    from django.contrib.auth import get_user_model

    root = get_user_model().objects.create_superuser("root", "", "pw-for-tests-only")
    client = Client()
    client.force_login(root)
    upload = io.BytesIO(GOOD)
    upload.name = "prices.csv"

    answer = client.post(reverse("admin:assistant_pricelist_import"), {"file": upload})

    assert answer.status_code == 302
    assert answer["Location"] == reverse("settings_price_list")
    assert not Job.objects.exists()
