"""What goes into a turn and what comes out of it.

`TurnInput` is built by the turn from the database; `Decision` is what every assistant backend
(the offline catalogue assistant, or a model behind the OpenAI-compatible API) returns, validated
by pydantic whatever produced it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Action(StrEnum):
    ANSWER = "answer"
    HANDOFF = "handoff"
    CLARIFY = "clarify"


class Item(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(max_length=200)
    qty: float | None = None


class Facts(BaseModel):
    """What the customer told us so far, for the manager and the CRM."""

    model_config = ConfigDict(extra="allow")

    name: str | None = Field(default=None, max_length=200)
    city: str | None = Field(default=None, max_length=200)
    items: list[Item] = Field(default_factory=list)


# What a customer's message may be about, as the model reports it (`Reading.intents`).
Intent = Literal[
    "asks_for_human",
    "ready_to_buy",
    "complaint",
    "non_standard_terms",
    "price_question",
    "rules_question",
    "greeting",
]
INTENTS: frozenset[str] = frozenset(get_args(Intent))


class WantedItem(BaseModel):
    """One item the customer wants this turn, by the price list's SKU, in the item's unit."""

    model_config = ConfigDict(extra="ignore")

    sku: str = Field(default="", max_length=200)
    qty: float | None = None
    unit: str = Field(default="", max_length=64)


class Reading(BaseModel):
    """What the model read in this turn's messages; code acts on it
    (`assistant.decision.model_reading`): the handoff from the intents, the amounts from the
    items. An intent outside the fixed set is dropped, not an invalid answer."""

    model_config = ConfigDict(extra="ignore")

    items: list[WantedItem] = Field(default_factory=list)
    intents: list[Intent] = Field(default_factory=list)
    # Intents the customer explicitly denies ("менеджер не нужен": asks_for_human).
    negated: list[Intent] = Field(default_factory=list)

    @field_validator("intents", "negated", mode="before")
    @classmethod
    def _known_only(cls, value: object) -> object:
        if not isinstance(value, list):
            return value
        return [v for v in value if isinstance(v, str) and v in INTENTS]


class Decision(BaseModel):
    model_config = ConfigDict(extra="ignore")

    action: Action
    reason: str = Field(default="", max_length=64)
    summary: str = Field(default="", max_length=2000)
    reply_to_customer: str = Field(max_length=4096)
    facts: Facts = Field(default_factory=Facts)
    # None: the backend gave no reading (the catalogue assistant, an older prompt).
    reading: Reading | None = None


Speaker = Literal["customer", "bot", "manager", "system"]


@dataclass(frozen=True)
class HistoryEntry:
    """One earlier message of the chat as the assistant sees it (voice as its transcript)."""

    speaker: Speaker
    text: str
    at: datetime
    voice_confidence: float | None = None


@dataclass(frozen=True)
class TurnInput:
    """Everything a backend may use to decide one turn. Built once per turn by the turn."""

    business_id: int
    channel_id: int
    chat_id: int
    language: str
    history: list[HistoryEntry]
    # This turn's customer messages, oldest first (voice notes as transcripts).
    pending: list[HistoryEntry]
    # Lowest transcript confidence among this turn's voice notes (None: no voice in the turn).
    lowest_voice_confidence: float | None = None
    voice_confidence_threshold: float = 0.6
    extra: dict[str, str] = field(default_factory=dict)
    # The team's language (`Business.ui_language`): what the handoff card is written in. Empty:
    # the customer's, as before (the evaluation, a turn built without a business).
    team_language: str = ""
