"""The Permissions-Policy header (Django sets the other security headers itself, django-csp the
Content-Security-Policy): browser features no inbox page uses are switched off, so a script
that got in anyway cannot ask for the camera, microphone or location."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils.deprecation import MiddlewareMixin


class PermissionsPolicyMiddleware(MiddlewareMixin):
    """A MiddlewareMixin, so async views stay async under daphne."""

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        policy = getattr(settings, "PERMISSIONS_POLICY", "")
        if policy:
            response.headers.setdefault("Permissions-Policy", policy)
        return response
