""" "Test connection": who we are on which portal with which permissions, or a clear error.

Used by `manage.py bitrix24_check` and (through the `bitrix24.test_connection` task, never in
a web request) by the settings page, which reads the stored report. The report's sentences are
in the active language: the task activates the asking admin's, the command none (English).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext

from integrations.bitrix24.crm.portal import (
    DEAL_TYPE_ID,
    LEAD_TYPE_ID,
    Pipeline,
    pipeline_from_rows,
    stage_list_entity,
)
from integrations.bitrix24.models import Bitrix24Settings
from integrations.bitrix24.rest.client import Command
from integrations.bitrix24.rest.connection import NotConfigured, client_for
from integrations.bitrix24.rest.errors import (
    AuthError,
    Bitrix24Error,
    NotFound,
    OperationTimeLimited,
    RateLimited,
)

log = logging.getLogger(__name__)

REQUIRED_SCOPES = {"crm", "user"}
APP_CONNECTOR_SCOPES = {"imconnector", "imopenlines"}


@dataclass
class ConnectionReport:
    ok: bool
    portal: str = ""
    user: str = ""
    scopes: list[str] = field(default_factory=list)
    error: str = ""
    user_id: int | None = None
    mode: str = ""
    warnings: list[str] = field(default_factory=list)


def explain(error: Bitrix24Error, portal: str) -> str:
    """One sentence an operator can act on."""
    detail = f"{error.code}: {error.description}" if error.description else error.code
    said = {"portal": portal, "detail": detail, "description": error.description}
    if isinstance(error, NotConfigured):
        return gettext("Bitrix24 is not configured: %(description)s.") % said
    if error.code == "NETWORK":
        return (
            gettext("Could not reach %(portal)s (%(description)s). Check the portal address.")
            % said
        )
    if error.code == "NON_JSON_RESPONSE":
        return (
            gettext(
                "%(portal)s did not answer like a Bitrix24 REST API (%(description)s). "
                "Check the webhook URL."
            )
            % said
        )
    if error.code.lower() == "insufficient_scope":
        return (
            gettext("The webhook lacks a permission (%(detail)s). Tick the CRM and Users scopes.")
            % said
        )
    if isinstance(error, AuthError):
        return (
            gettext(
                "Bitrix24 rejected the credentials (%(detail)s). The webhook may have been "
                "deleted or expired, or its user deactivated: create a new one and configure it "
                "again."
            )
            % said
        )
    if isinstance(error, RateLimited | OperationTimeLimited):
        return (
            gettext("The portal is rate limiting requests (%(detail)s). Try again in a minute.")
            % said
        )
    return gettext("Bitrix24 answered with an error (%(detail)s).") % said


def _type_id(cfg: Bitrix24Settings) -> int:
    """The entityTypeId of what a new chat creates: a deal unless leads are chosen."""
    return DEAL_TYPE_ID if cfg.entity == Bitrix24Settings.Entity.DEAL else LEAD_TYPE_ID


def test_connection(business_id: int) -> ConnectionReport:
    """Ask the portal who we are, which scopes we have, and whether the configured pipeline,
    handoff stage and entity exist. Makes read-only calls only."""
    cfg = Bitrix24Settings.objects.select_related("business").filter(business_id=business_id)
    settings_row = cfg.first()
    if settings_row is None:
        return ConnectionReport(
            ok=False, error=gettext("Bitrix24 is not configured for this business.")
        )
    report = ConnectionReport(ok=False, portal=settings_row.portal_host, mode=settings_row.mode)
    try:
        with client_for(settings_row) as client:
            client.max_attempts = 2
            commands = [
                Command("me", "user.current"),
                Command("scope", "scope"),
                Command("mode", "crm.settings.mode.get"),
                Command("pipelines", "crm.category.list", {"entityTypeId": DEAL_TYPE_ID}),
                Command(
                    "stages",
                    "crm.status.list",
                    {
                        "filter": {
                            "ENTITY_ID": stage_list_entity(
                                _type_id(settings_row), settings_row.pipeline_id
                            )
                        }
                    },
                ),
            ]
            if settings_row.mode == Bitrix24Settings.Mode.APP:
                commands.append(Command("app", "app.info"))
            outcome = client.batch(commands)
    except Bitrix24Error as exc:
        report.error = explain(exc, report.portal)
        log.info(
            "bitrix24.check_failed",
            extra={"business_id": business_id, "portal": report.portal, "code": exc.code},
        )
        return report
    if "me" in outcome.errors:
        report.error = explain(outcome.errors["me"], report.portal)
        return report
    me: dict[str, Any] = outcome.results.get("me") or {}
    name = " ".join(str(me.get(k) or "") for k in ("NAME", "LAST_NAME")).strip()
    report.user_id = int(me["ID"]) if str(me.get("ID", "")).isdigit() else None
    report.user = f"{name or gettext('user')} (ID {report.user_id})"
    scopes = outcome.results.get("scope")
    report.scopes = sorted(str(s) for s in scopes) if isinstance(scopes, list) else []
    _warnings(settings_row, outcome.results, outcome.errors, report)
    report.ok = True
    log.info(
        "bitrix24.check_ok",
        extra={
            "business_id": business_id,
            "portal": report.portal,
            "warnings": len(report.warnings),
        },
    )
    return report


def _warnings(
    cfg: Bitrix24Settings,
    results: dict[str, Any],
    errors: dict[str, Bitrix24Error],
    report: ConnectionReport,
) -> None:
    wanted = set(REQUIRED_SCOPES)
    if cfg.mode == Bitrix24Settings.Mode.APP and cfg.sync_open_channels:
        wanted |= APP_CONNECTOR_SCOPES
    missing = sorted(wanted - set(report.scopes))
    if report.scopes and missing:
        report.warnings.append(
            gettext("Missing scopes: %(scopes)s.") % {"scopes": ", ".join(missing)}
        )
    if str(results.get("mode")) == "2" and cfg.entity == Bitrix24Settings.Entity.LEAD:
        report.warnings.append(
            gettext("Leads are disabled on this portal (simple CRM mode): chats will create deals.")
        )
    pipelines = (
        (results.get("pipelines") or {}).get("categories")
        if isinstance(results.get("pipelines"), dict)
        else None
    )
    if cfg.entity == Bitrix24Settings.Entity.DEAL and isinstance(pipelines, list):
        ids = {int(p.get("id", -1)) for p in pipelines}
        if cfg.pipeline_id not in ids:
            report.warnings.append(
                gettext("Pipeline %(pipeline)s does not exist on this portal.")
                % {"pipeline": cfg.pipeline_id}
            )
    pipeline: Pipeline | None = None
    if "stages" not in errors:
        try:
            pipeline = pipeline_from_rows(_type_id(cfg), cfg.pipeline_id, results.get("stages"))
        except Bitrix24Error:
            pipeline = None
    if pipeline is not None and cfg.handoff_stage:
        try:
            pipeline.resolve(cfg.handoff_stage)
        except Bitrix24Error:
            report.warnings.append(
                gettext("Handoff stage: stage %(stage)s is not in this pipeline (%(stages)s).")
                % {
                    "stage": repr(cfg.handoff_stage.strip()),
                    "stages": ", ".join(s.id for s in pipeline.stages),
                }
            )
    if cfg.technical_user_id and report.user_id and cfg.technical_user_id != report.user_id:
        report.warnings.append(
            gettext(
                "The technical user is set to %(set)s but the connection acts as %(acting)s: "
                "echoes of our own writes are recognised by that user."
            )
            % {"set": cfg.technical_user_id, "acting": report.user_id}
        )
    app_error = errors.get("app")
    if app_error is not None and not isinstance(app_error, NotFound):
        report.warnings.append(gettext("app.info failed: %(code)s.") % {"code": app_error.code})


def store_report(business_id: int, report: ConnectionReport) -> dict[str, Any]:
    data = asdict(report)
    Bitrix24Settings.objects.filter(business_id=business_id).update(
        last_check=data, last_check_at=timezone.now()
    )
    return data


def last_report(business_id: int) -> ConnectionReport | None:
    """The report of the last "test connection" run, for the settings page."""
    row = Bitrix24Settings.objects.filter(business_id=business_id).values("last_check").first()
    if not row or not row["last_check"]:
        return None
    return ConnectionReport(**row["last_check"])
