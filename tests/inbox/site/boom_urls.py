"""The site's URLs plus one page that fails, to see what a visitor gets for a server error."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path

from inbox.site.urls import handler500  # noqa: F401  (the site's 500 page)
from inbox.site.urls import urlpatterns as site_urlpatterns


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("db_password=hunter2 leaked from a failing view")


urlpatterns = [path("boom/", boom), *site_urlpatterns]
