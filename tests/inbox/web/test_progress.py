"""Live progress of long work: the worker's figures, the fragment the pages poll, and that an
admin sees only their own businesses' jobs."""

from __future__ import annotations

import pytest
from django.test import Client

from inbox.conversations import progress
from inbox.conversations.models import Job
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_fragment_shows_done_total_and_errors_and_stops_polling_at_the_end() -> None:
    business = factories.business()
    client = Client()
    client.force_login(factories.manager(business, role="admin"))
    job_id = progress.start(business.pk, Job.Kind.PURGE, total=1200)
    progress.advance(job_id, done=500)
    progress.advance(job_id, done=100, errors=1, error="message 42: OSError")

    running = client.get(f"/inbox/progress/{job_id}/").content.decode()
    assert "<span data-job-done>600</span> / <span data-job-total>1200</span>" in running
    assert "errors: <span data-job-errors>1</span>" in running
    assert "message 42: OSError" in running
    assert 'hx-trigger="every 1s"' in running

    progress.finish(job_id)
    finished = client.get(f"/inbox/progress/{job_id}/").content.decode()
    assert 'data-job-state="done"' in finished
    assert "hx-trigger" not in finished


def test_another_business_job_is_a_404_and_managers_see_none() -> None:
    mine, theirs = factories.business(), factories.business()
    admin = Client()
    admin.force_login(factories.manager(mine, role="admin"))
    manager = Client()
    manager.force_login(factories.manager(mine))
    their_job = progress.start(theirs.pk, Job.Kind.PRICE_IMPORT)
    my_job = progress.start(mine.pk, Job.Kind.PRICE_IMPORT)

    assert admin.get(f"/inbox/progress/{their_job}/").status_code == 404
    assert admin.get(f"/inbox/progress/{my_job}/").status_code == 200
    assert manager.get(f"/inbox/progress/{my_job}/").status_code == 404


def test_only_the_last_runs_of_a_kind_are_kept() -> None:
    business = factories.business()
    for _ in range(progress.KEEP_PER_KIND + 3):
        progress.finish(progress.start(business.pk, Job.Kind.CRM_RECONCILE))
    assert Job.objects.filter(business=business).count() == progress.KEEP_PER_KIND + 1
