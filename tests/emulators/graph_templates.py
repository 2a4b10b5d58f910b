"""The message-template side of the Graph API emulator (`graph_api.GraphApiEmulator.templates`).

A WhatsApp Business Account's templates, listed a page at a time by
`GET /{waba-id}/message_templates` (`data`, `paging.cursors.before/after`, `paging.next` while
more follow), template sends checked like Meta checks them (an unknown name or language: error
132001; a parameter count that does not match the template's variables: 132000; a template not
approved: 132015/132016 or 132001), and the `message_template_status_update` webhook body.
"""

from __future__ import annotations

import base64
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode

_VARIABLE = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")


@dataclass
class Template:
    name: str
    language: str
    category: str
    status: str
    components: list[dict[str, Any]]
    parameter_format: str = "POSITIONAL"
    id: str = ""

    def as_listed(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "parameter_format": self.parameter_format,
            "components": self.components,
            "language": self.language,
            "status": self.status,
            "category": self.category,
            "id": self.id,
        }

    def variables(self, kind: str) -> list[str]:
        for component in self.components:
            if component.get("type") == kind:
                return list(dict.fromkeys(_VARIABLE.findall(str(component.get("text", "")))))
        return []


def body_component(text: str, examples: list[str] | None = None) -> dict[str, Any]:
    component: dict[str, Any] = {"type": "BODY", "text": text}
    if examples:
        component["example"] = {"body_text": [examples]}
    return component


@dataclass
class TemplateSend:
    """A template the emulator accepted: what the customer would read."""

    phone_number_id: str
    to: str
    name: str
    language: str
    rendered: str
    body: dict[str, Any]
    at: float = field(default_factory=time.time)


class TemplateBook:
    def __init__(self) -> None:
        self._by_waba: dict[str, list[Template]] = {}
        self._waba_of: dict[str, str] = {}  # phone number id → WABA id
        self._ids = 1000
        self._lock = threading.Lock()
        self.page_size = 2  # small, so paging is exercised
        self.sends: list[TemplateSend] = []
        self.list_requests: list[str] = []

    def link(self, waba_id: str, phone_number_id: str) -> None:
        self._waba_of[phone_number_id] = waba_id
        self._by_waba.setdefault(waba_id, [])

    def has_waba(self, waba_id: str) -> bool:
        return waba_id in self._by_waba

    def add(self, waba_id: str, name: str, language: str = "en_US", *, body: str,
            category: str = "UTILITY", status: str = "APPROVED", header: str = "",
            parameter_format: str = "POSITIONAL") -> Template:  # fmt: skip
        components: list[dict[str, Any]] = []
        if header:
            components.append({"type": "HEADER", "format": "TEXT", "text": header})
        components.append(body_component(body))
        with self._lock:
            self._ids += 1
            template = Template(name, language, category, status, components,
                                parameter_format, str(self._ids))  # fmt: skip
            self._by_waba.setdefault(waba_id, []).append(template)
        return template

    def set_status(self, waba_id: str, name: str, language: str, status: str) -> Template:
        template = self.find(waba_id, name, language)
        assert template is not None, name
        template.status = status
        return template

    def find(self, waba_id: str, name: str, language: str) -> Template | None:
        for template in self._by_waba.get(waba_id, []):
            if template.name == name and template.language == language:
                return template
        return None

    def handle_list(self, base_url: str, path: str, waba_id: str) -> tuple[int, Any]:
        query = parse_qs(path.partition("?")[2])
        self.list_requests.append(path)
        after = query.get("after", [""])[0]
        limit = min(int(query.get("limit", ["25"])[0]), self.page_size)
        start = int(base64.b64decode(after).decode()) if after else 0
        items = self._by_waba[waba_id][start : start + limit]
        end = start + len(items)
        body: dict[str, Any] = {"data": [t.as_listed() for t in items]}
        if items:
            cursors = {
                "before": base64.b64encode(str(start).encode()).decode(),
                "after": base64.b64encode(str(end).encode()).decode(),
            }
            body["paging"] = {"cursors": cursors}
            if end < len(self._by_waba[waba_id]):
                params = {k: v[0] for k, v in query.items()} | {"after": cursors["after"]}
                body["paging"]["next"] = f"{base_url}{path.partition('?')[0]}?{urlencode(params)}"
        return 200, body

    def check_send(self, phone_number_id: str, body: dict[str, Any]) -> tuple[int, str] | str:
        """The rendered text of an acceptable template send, else (error code, detail)."""
        spec = body.get("template")
        if not isinstance(spec, dict) or not isinstance(spec.get("language"), dict):
            return 100, "Param template is invalid"
        name, language = str(spec.get("name", "")), str(spec["language"].get("code", ""))
        template = self.find(self._waba_of.get(phone_number_id, ""), name, language)
        if template is None:
            return 132001, f"template name ({name}) does not exist in {language}"
        if template.status == "PAUSED":
            return 132015, "Template is paused"
        if template.status == "DISABLED":
            return 132016, "Template is disabled"
        if template.status != "APPROVED":
            return 132001, f"template name ({name}) does not exist in {language}"
        given: dict[str, list[dict[str, Any]]] = {}
        for component in spec.get("components") or []:
            given[str(component.get("type", "")).upper()] = list(component.get("parameters", []))
        texts: dict[str, str] = {}
        for kind in ("HEADER", "BODY"):
            names = template.variables(kind)
            parameters = given.get(kind, [])
            if len(parameters) != len(names):
                return 132000, (
                    f"Number of parameters does not match the expected number of params "
                    f"({kind.lower()}: expected {len(names)}, got {len(parameters)})"
                )
            for index, parameter in enumerate(parameters):
                if template.parameter_format == "NAMED":
                    key = str(parameter.get("parameter_name", ""))
                    if key not in names:
                        return 132000, f"Unknown parameter_name {key!r}"
                else:
                    key = str(index + 1)
                if parameter.get("type") != "text" or not str(parameter.get("text", "")).strip():
                    return 132000, "Parameter text is missing"
                texts[key] = str(parameter["text"])
        rendered = "\n\n".join(
            _VARIABLE.sub(lambda m: texts.get(m.group(1), m.group(0)), str(c.get("text", "")))
            for c in template.components
            if c.get("type") in ("HEADER", "BODY") and c.get("text")
        )
        with self._lock:
            self.sends.append(
                TemplateSend(
                    phone_number_id, str(body.get("to", "")), name, language, rendered, body
                )
            )
        return rendered


def status_update_body(waba_id: str, template: Template, event: str, reason: str = "NONE") -> dict[str, Any]:  # fmt: skip
    """The webhook Meta posts when a template's status changes."""
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": waba_id,
                "time": int(time.time()),
                "changes": [
                    {
                        "value": {
                            "event": event,
                            "message_template_id": int(template.id or 0),
                            "message_template_name": template.name,
                            "message_template_language": template.language,
                            "reason": reason,
                        },
                        "field": "message_template_status_update",
                    }
                ],
            }
        ],
    }
