"""One chat's sync pass, its state and its step codes: what `plan.Planner` and
`steps.LinkSync` read and write as the pass goes on (push.py keeps one `Work` per claimed chat).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from inbox.conversations.models import Chat
from integrations.bitrix24.models import CrmLink, FailedMessageSync, HandoffSync
from integrations.bitrix24.rest.client import Command
from integrations.bitrix24.rest.errors import Bitrix24Error


class Step(StrEnum):
    """A command of one chat's pass. The value names the command inside a batch
    (`w{link id}_{value}`, e.g. `w12_eadd`); HANDOFF_COMMENT and FAILED_COMMENT are templates
    filled with the handoff's or the message's id, one comment each."""

    FIND_CONTACT_BY_PHONE = "dup"
    FIND_CONTACT_BY_ORIGIN = "cor"
    FIND_ENTITY = "ent"
    ADD_CONTACT = "cadd"
    ADD_ENTITY = "eadd"
    LINK_COMMENT = "lc"
    LIST_COMMENTS = "cl"
    HANDOFF_COMMENT = "h{}c"
    FAILED_COMMENT = "f{}c"
    HANDOFF_STAGE = "hs"
    FIND_USER = "usr"
    SET_RESPONSIBLE = "resp"
    VERIFY_ENTITY = "ve"
    VERIFY_CONTACT = "vc"
    FIX_CONTACT_PHONE = "vcu"

    def code(self, object_id: int | None = None) -> str:
        """The step's part of a batch key (for a handoff's or a failed message's comment, with
        its id in it)."""
        if self in (Step.HANDOFF_COMMENT, Step.FAILED_COMMENT):
            return self.value.format(object_id)
        return self.value


# Answered without an error, these mean the lookup of the chat's contact and entity is done.
LOOKUP_STEPS = frozenset(
    {Step.FIND_CONTACT_BY_PHONE, Step.FIND_CONTACT_BY_ORIGIN, Step.FIND_ENTITY}
)
# Steps on the existing entity: NotFound means a manager deleted it.
ENTITY_STEPS = frozenset({Step.VERIFY_ENTITY, Step.HANDOFF_STAGE, Step.SET_RESPONSIBLE})
# Steps whose written state was stored in advance (`Planner._expect`): undone when they fail.
EXPECTED_STEPS = frozenset({Step.ADD_ENTITY, Step.HANDOFF_STAGE, Step.SET_RESPONSIBLE})


@dataclass
class Work:
    """One chat's pass: what is known, what this pass already did, what failed."""

    link: CrmLink
    seq: int
    chat: Chat
    handoffs: list[HandoffSync]
    phone: str
    looked_up: bool = False
    entity_found: bool = False
    scan_cursor: int = 0
    scan_done: bool = False
    found_comments: dict[str, int] = field(default_factory=dict)
    stage_sent: bool = False
    responsible_sent: bool = False
    user_lookup_done: bool = False
    contact_checked: bool = False
    phone_fixed: bool = False
    entity_checked: bool = False
    phone_fix: Command | None = None
    started_in_doubt: bool = False
    complete: bool = False
    error: Bitrix24Error | None = None
    previous: tuple[dict[str, Any], str] | None = None
    writes: bool = False
    # Messages WhatsApp did not deliver whose timeline comment is still to write.
    failures: list[FailedMessageSync] = field(default_factory=list)

    def key(self, step: Step, object_id: int | None = None) -> str:
        """The command's key in a batch: unique per chat and step, never numeric."""
        return f"w{self.link.pk}_{step.code(object_id)}"
