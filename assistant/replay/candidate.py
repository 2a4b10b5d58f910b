"""A candidate change, and the assistant's inputs with it laid over what is live.

    candidate = Candidate.of(run)
    knowledge = candidate.knowledge_for(channel_id)   # the staged list instead of the live one
    config = candidate.settings_for(business_id)      # edited rules/reasons/promises, unsaved
    client = candidate.client(live_config)            # the other endpoint, or the live one

Stored on the ReplayRun as plain JSON (`candidate_json`), so a replay outlives the hour a
staged upload waits and Apply writes exactly what was replayed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.utils.translation import gettext

from assistant.knowledge.effective import (
    Knowledge,
    KnowledgeItem,
    assistant_settings,
    knowledge_for_channel,
    merge,
)
from assistant.knowledge.price_import import ImportPreview, ParsedRow, item_fields
from assistant.llm.business import business_endpoint
from assistant.llm.client import Endpoint, LLMClient, endpoints_from_settings
from assistant.llm.resilience import NullGuard
from assistant.models import AssistantSettings, split_aliases
from inbox.platform import egress

# The LLM client's metrics label calls by endpoint name: a replay's calls are never counted
# as a real chat's ("primary"/"secondary").
REPLAY_ENDPOINT = "replay"


@dataclass(frozen=True)
class CandidateModel:
    base_url: str
    model: str
    structured_output: str = "json_schema"
    api_key: str = ""


@dataclass(frozen=True)
class Candidate:
    # The staged list and which list it replaces (None: the business's own list).
    preview: ImportPreview | None = None
    price_list_channel_id: int | None = None
    rules: dict[str, Any] | None = None  # business_rules, handoff_reasons, forbidden_promises
    model: CandidateModel | None = None

    @property
    def empty(self) -> bool:
        return self.preview is None and self.rules is None and self.model is None

    def describe(self) -> list[str]:
        """What changes, in words for the report's head."""
        parts = []
        if self.preview is not None:
            if self.price_list_channel_id is not None:
                text = gettext("%(name)s (items: %(count)s) instead of a channel's override list")
            else:
                text = gettext("%(name)s (items: %(count)s) instead of the business's price list")
            name = self.preview.source_name or gettext("a price list")
            parts.append(text % {"name": name, "count": len(self.preview.rows)})
        if self.rules is not None:
            parts.append(gettext("edited rules, handoff reasons and forbidden promises"))
        if self.model is not None:
            model = {"model": self.model.model, "url": self.model.base_url}
            parts.append(gettext("model %(model)s at %(url)s") % model)
        return parts

    # --- the assistant's inputs ---------------------------------------------------------

    def knowledge_for(self, channel_id: int) -> Knowledge:
        live = knowledge_for_channel(channel_id)
        if self.preview is None:
            return live
        staged = [_item(row) for row in self.preview.rows]
        if self.price_list_channel_id is None:
            overrides = [i for i in live.items if i.from_channel]
            items = merge(staged, overrides)
        elif self.price_list_channel_id == channel_id:
            base = [i for i in live.items if not i.from_channel]
            items = merge(base, [replace(i, from_channel=True) for i in staged])
        else:
            return live
        return replace(live, items=items, version=f"{live.version}+replay")

    def settings_for(self, business_id: int) -> AssistantSettings:
        config = assistant_settings(business_id)
        if self.rules is None:
            return config
        return AssistantSettings(
            pk=config.pk,
            business_id=business_id,
            business_rules=self.rules.get("business_rules", ""),
            handoff_reasons=self.rules.get("handoff_reasons", []),
            forbidden_promises=self.rules.get("forbidden_promises", []),
            prompt_version=config.prompt_version,
            model_base_url=config.model_base_url,
            model_name=config.model_name,
            model_structured_output=config.model_structured_output,
            model_api_key=config.model_api_key,
        )

    def check_egress(self) -> None:
        """Raise EgressRefused unless the candidate model's URL passes the egress allow-list.
        Checked when typed, when the replay starts and before each turn: the name may resolve
        elsewhere by then."""
        if self.model is not None:
            egress.check(self.model.base_url)

    def client(self, live: AssistantSettings | None = None) -> LLMClient | None:
        """The client a replay asks: the candidate model, else what the business's turns use
        now (`live`: its own endpoint, or the installation's chain); None: the catalogue
        assistant (no model configured)."""
        own = business_endpoint(live) if live is not None else None
        if self.model is not None:
            self.check_egress()
            endpoints = [
                Endpoint(
                    REPLAY_ENDPOINT,
                    (self.model.base_url.rstrip("/"),),
                    self.model.model,
                    self.model.api_key,
                    self.model.structured_output,
                    egress_checked=True,
                )
            ]
        elif own is not None:
            egress.check(own.base_urls[0])
            endpoints = [replace(own, name=f"{REPLAY_ENDPOINT}-{own.name}")]
        elif settings.LLM_BASE_URL:
            endpoints = [
                replace(e, name=f"{REPLAY_ENDPOINT}-{e.name}") for e in endpoints_from_settings()
            ]
        else:
            return None
        # No shared breaker or admission slots: a replay never opens the breaker of the
        # endpoint real chats use, nor takes their slots. It asks one turn at a time.
        return LLMClient(
            endpoints,
            NullGuard(),
            timeout=settings.LLM_TIMEOUT_SECONDS,
            connect_timeout=settings.LLM_CONNECT_TIMEOUT_SECONDS,
            max_retries=1,
            backoff=settings.LLM_RETRY_BACKOFF_SECONDS,
            admission_wait=0.0,
            stream=settings.LLM_STREAM,
            max_tokens=settings.LLM_MAX_TOKENS,
            temperature=settings.LLM_TEMPERATURE,
        )

    # --- storage --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.preview is not None:
            data["price_list"] = {
                "channel_id": self.price_list_channel_id,
                "preview": json_safe(dataclasses.asdict(self.preview)),
            }
        if self.rules is not None:
            data["rules"] = self.rules
        if self.model is not None:
            data["model"] = {
                "base_url": self.model.base_url,
                "model": self.model.model,
                "structured_output": self.model.structured_output,
            }
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], api_key: str = "") -> Candidate:
        preview, channel_id = None, None
        if "price_list" in data:
            raw = data["price_list"]["preview"]
            channel_id = data["price_list"]["channel_id"]
            preview = ImportPreview(
                raw["source_name"],
                raw["sha256"],
                raw["columns"],
                tuple(ParsedRow(**{**r, "price": Decimal(r["price"])}) for r in raw["rows"]),
                (),
                tuple(raw.get("warnings", ())),
            )
        model = None
        if "model" in data:
            model = CandidateModel(**data["model"], api_key=api_key)
        return cls(preview, channel_id, data.get("rules"), model)


def json_safe(value: Any) -> Any:
    """Decimals as exact strings, tuples as lists: what a JSONField stores."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def _item(row: ParsedRow) -> KnowledgeItem:
    return KnowledgeItem(**item_fields(row), aliases=split_aliases(row.aliases))
