"""Price-list files are read by a Celery worker (a real one, as a process) under a time and a
memory limit, never by the web process: a hostile spreadsheet costs a worker's minute at most,
and its uploader gets a file error instead of a preview."""

from __future__ import annotations

import io
from typing import Any

import openpyxl
import pytest
from django.core.files.storage import default_storage
from django.test import Client

from assistant.knowledge import price_upload
from tests import factories
from tests.processes import ProcessGroup, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]


def _preview_for(user: Any, token: str) -> price_upload.StagedUpload:
    def ready() -> price_upload.StagedUpload | None:
        return None if price_upload.parsing(token, user) else price_upload.take(token, user)

    return wait_for(ready, timeout=90, interval=0.2, message="the worker's preview")


def _submit(user: Any, data: bytes, filename: str) -> str:
    business = factories.business()
    return price_upload.submit(data, filename, "KZT", business_id=business.pk, channel_id=None,
                               user=user)  # fmt: skip


def _big_xlsx(rows: int) -> bytes:
    workbook = openpyxl.Workbook(write_only=True)
    sheet = workbook.create_sheet()
    sheet.append(["sku", "name", "price", "currency", "description"])
    for i in range(rows):
        sheet.append(
            [f"SKU-{i}", f"Product number {i} with a long name", 1000 + i, "KZT", "x" * 60]
        )
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_a_file_that_needs_too_much_memory_is_a_file_error(
    processes: ProcessGroup, django_user_model: Any
) -> None:
    processes.start_celery_worker("upload-memory", env={"PRICE_UPLOAD_MEMORY_MB": "16"})
    user = django_user_model.objects.create_user("uploader", password="pw-for-tests-only")
    rows = "".join(
        f"SKU-{i},Product number {i} with a long name,{1000 + i},KZT\n" for i in range(40_000)
    )
    token = _submit(user, ("sku,name,price,currency\n" + rows).encode(), "big.csv")

    staged = _preview_for(user, token)

    assert staged.preview.rows == ()
    (error,) = staged.preview.errors
    assert "needed more than 16 MB of memory" in str(error)
    assert not default_storage.exists(price_upload._file_name(token))  # the file is gone


def test_a_file_that_takes_too_long_is_a_file_error(
    processes: ProcessGroup, django_user_model: Any, settings: Any
) -> None:
    settings.PRICE_UPLOAD_TIME_LIMIT_SECONDS = 1  # the web side's setting travels with the task
    processes.start_celery_worker("upload-time", env={"PRICE_UPLOAD_TIME_LIMIT_SECONDS": "1"})
    user = django_user_model.objects.create_user("uploader", password="pw-for-tests-only")
    token = _submit(user, _big_xlsx(45_000), "big.xlsx")  # ~3-5 s of CPU to read

    staged = _preview_for(user, token)

    assert staged.preview.rows == ()
    (error,) = staged.preview.errors
    assert "took longer than 1 seconds" in str(error)


def test_the_page_polls_until_the_worker_has_the_preview(
    processes: ProcessGroup, django_user_model: Any
) -> None:
    from inbox.conversations.models import Membership

    processes.start_celery_worker("upload-page")
    business = factories.business("Oak & Co")
    admin = factories.manager(business, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    upload = io.BytesIO(b"sku,name,price,currency\nT1,Oak table,120000,KZT\n")
    upload.name = "prices.csv"

    answer = client.post("/inbox/settings/price-list/", {"target": f"b{business.pk}",
                                                         "file": upload})  # fmt: skip

    assert answer.status_code == 302
    first = client.get(answer["Location"]).content.decode()
    if 'data-upload-state="parsing"' in first:  # the worker had not finished yet
        assert 'hx-trigger="every 1s"' in first
        assert "vendor/htmx.min.js" in first
    page = wait_for(
        lambda: (p := client.get(answer["Location"]).content.decode())
        and 'data-upload-state="ready"' in p
        and p,
        timeout=60, interval=0.2, message="the preview",
    )  # fmt: skip
    assert "Oak table" in page
    assert "Apply this price list" in page
