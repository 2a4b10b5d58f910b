"""A price-list file read by a real worker reports its progress: rows read of the file's rows
and errors so far, on a Job the upload page shows (and finds again after a reload)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from assistant.knowledge import price_upload
from inbox.conversations.models import Job
from tests import factories
from tests.processes import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
    pytest.mark.usefixtures("celery_worker"),
]


def test_the_worker_reports_rows_read_and_errors_on_the_upload_page() -> None:
    business, other = factories.business(), factories.business()
    admin = factories.manager(business, role="admin")
    rows = "".join(f"SKU-{i},Product {i},{1000 + i}\n" for i in range(2500))
    data = ("sku,name,price\n" + rows + "SKU-X,Broken,abc\n").encode()

    token = price_upload.submit(data, "big.csv", "KZT", business_id=business.pk, channel_id=None,
                                user=admin)  # fmt: skip

    def ended() -> Job | None:
        job = Job.objects.filter(business=business, kind=Job.Kind.PRICE_IMPORT).first()
        return job if job is not None and job.state != Job.State.RUNNING else None

    job = wait_for(ended, timeout=90, interval=0.2, message="the import job's end")
    assert (job.state, job.done, job.total, job.errors) == ("done", 2500, 2501, 1)
    client = Client()
    client.force_login(admin)

    def ready_page() -> str | None:
        # The job ends a moment before the preview is stored (the page never shows a ready
        # preview beside a running job), so the page is polled as the browser polls it.
        page = client.get(f"/inbox/settings/price-list/?upload={token}").content.decode()
        return page if 'data-upload-state="ready"' in page else None

    page = wait_for(ready_page, timeout=30, interval=0.2, message="the ready preview")
    assert 'data-action="apply-skipping-bad-rows"' in page
    intruder: Any = factories.manager(other, role="admin")
    client.force_login(intruder)
    assert client.get(f"/inbox/progress/{job.pk}/").status_code == 404
    assert price_upload.take(token, intruder) is None
