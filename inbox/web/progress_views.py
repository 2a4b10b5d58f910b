"""The live progress fragment of long work (inbox.conversations.progress): the pages include
it for their latest job, and it polls this view until the job ends. Business admins only, and
only for their own businesses' jobs (another business's job is a 404)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from inbox.conversations import access, progress


@login_required
@require_GET
def job_progress(request: HttpRequest, job_id: int) -> HttpResponse:
    business_ids = access.administered_businesses(request.user).values_list("pk", flat=True)
    job = progress.visible(job_id, business_ids)
    if job is None:
        raise Http404("no such job")
    return render(request, "inbox/_progress.html", {"job": job})
