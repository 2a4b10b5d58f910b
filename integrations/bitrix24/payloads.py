"""Typed model of a Bitrix24 outbound event, read after PHP bracket-style key parsing
(`rest.phpquery.decode`: `data[FIELDS][ID]=7` → `{"data": {"FIELDS": {"ID": "7"}}}`).

Why a model: the form is whatever the sender wrote, so any key may hold a string, a dict or a
list. One declaration says what the intake reads; everything else is ignored
(`extra="ignore"`, Bitrix24 adds fields per event). Leaves are read the way the intake always
read them (`str(value or "")`, cut to the stored length); a sub-object of the wrong type reads
as empty, so a mangled event is acknowledged and does nothing rather than failing. The request
never fails on the form's shape: Bitrix24 does not retry, so an error would only lose events.

The event names the sync binds and acts on are closed sets here too: `EventName` for the
events it handles by name, and `crm_event`/`entity_of_event` for the CRM ones, which are
spelled `ONCRM{ENTITY}{ACTION}` (`ONCRMDEALUPDATE`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from integrations.bitrix24.models import CrmEntity

__all__ = [
    "CrmAction",
    "Event",
    "EventName",
    "OperatorMessage",
    "crm_event",
    "entity_of_event",
    "parse",
]

MAX_REPLY_CHARS = 4096


class EventName(StrEnum):
    """Outbound events handled by name (the CRM ones are `crm_event`'s)."""

    APP_INSTALL = "ONAPPINSTALL"  # a local application's first tokens (setup/install.py)
    OFFLINE_EVENT = "ONOFFLINEEVENT"  # the offline queue has records (inbound/offline.py)
    CONNECTOR_MESSAGE_ADD = "ONIMCONNECTORMESSAGEADD"  # an operator replied in Open Channels


class CrmAction(StrEnum):
    """What happened to a CRM entity, the tail of its event's name."""

    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    MOVE_TO_CATEGORY = "MOVETOCATEGORY"


def crm_event(entity: CrmEntity, action: CrmAction) -> str:
    """The event Bitrix24 sends when `action` happens to an `entity`: `ONCRMDEALUPDATE`."""
    return f"ONCRM{entity.value.upper()}{action.value}"


def entity_of_event(event: str) -> CrmEntity | None:
    """`ONCRMDEALUPDATE` → `CrmEntity.DEAL`; None for events that are not about a synced
    entity."""
    name = event.upper()
    for entity in CrmEntity:
        if any(name == crm_event(entity, action) for action in CrmAction):
            return entity
    return None


def _text(limit: int) -> Any:
    return BeforeValidator(lambda value: str(value or "")[:limit])


def _object(value: Any) -> Any:
    return value if isinstance(value, dict) else {}


def _messages(value: Any) -> list[Any]:
    """`MESSAGES` arrives as `MESSAGES[0][…]` (a list) or with other keys (a dict); only the
    objects among its items are messages."""
    items = (
        value
        if isinstance(value, list)
        else list(value.values())
        if isinstance(value, dict)
        else []
    )
    return [item for item in items if isinstance(item, dict)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Auth(_Model):
    domain: Annotated[str, _text(255)] = ""
    application_token: Annotated[str, BeforeValidator(lambda v: str(v or ""))] = ""


class Fields(_Model):
    ID: Annotated[str, BeforeValidator(lambda v: str(v or ""))] = ""


class _Im(_Model):
    chat_id: Annotated[str, _text(32)] = ""
    message_id: Annotated[str, _text(32)] = ""


class _MessageBody(_Model):
    user_id: Annotated[str, _text(18)] = ""
    text: Annotated[str, _text(MAX_REPLY_CHARS)] = ""


class _ChatRef(_Model):
    id: Annotated[str, _text(64)] = ""


class OperatorMessage(_Model):
    """One item of an `ONIMCONNECTORMESSAGEADD` event: an operator's reply in Open Channels."""

    im: Annotated[_Im, BeforeValidator(_object)] = _Im()
    message: Annotated[_MessageBody, BeforeValidator(_object)] = _MessageBody()
    chat: Annotated[_ChatRef, BeforeValidator(_object)] = _ChatRef()

    def as_task_args(self) -> dict[str, str]:
        """The plain dict the `operator_replies` task takes (JSON for Celery)."""
        return {
            "im_chat_id": self.im.chat_id,
            "im_message_id": self.im.message_id,
            "user_id": self.message.user_id,
            "text": self.message.text,
            "chat_id": self.chat.id,
        }


class Data(_Model):
    FIELDS: Annotated[Fields, BeforeValidator(_object)] = Fields()
    CONNECTOR: Annotated[str, BeforeValidator(lambda v: str(v or ""))] = ""
    MESSAGES: Annotated[list[OperatorMessage], BeforeValidator(_messages)] = Field(
        default_factory=list
    )


class Event(_Model):
    event: Annotated[str, BeforeValidator(lambda v: str(v or "").upper()[:64])] = ""
    auth: Annotated[Auth, BeforeValidator(_object)] = Auth()
    data: Annotated[Data, BeforeValidator(_object)] = Data()

    @property
    def entity_id(self) -> int | None:
        """`data[FIELDS][ID]` when it is a plausible Bitrix24 ID (ASCII digits — `"²".isdigit()`
        is true but `int("²")` raises — that fit in a bigint)."""
        raw = self.data.FIELDS.ID
        return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 19 else None


def parse(form: dict[str, Any]) -> Event:
    """The decoded form as an `Event`; never raises (every field is lenient, see above)."""
    return Event.model_validate(form)
