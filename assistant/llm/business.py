"""A business's own model endpoint (AssistantSettings.model_*), used instead of the installation's.

    client = client_for(config)   # the business's endpoint, the installation's chain, or None

Blank base URL: the installation's chain (LLM_BASE_URL, LLM_FALLBACK_BASE_URL), as before; None
when that is empty too (the catalogue assistant answers). A set URL replaces the chain: the
business's conversations never go to another model, so when its endpoint fails the chat is
handed to a person (`model_unavailable` / `model_misconfigured`) rather than sent elsewhere.
The URL was typed by a business admin: it passes the egress allow-list when saved, here before
each turn (`check`), and on every connection (the pinned client). Its breakers and admission
slots are its own (keyed by the endpoint), so a broken endpoint of one business never opens
the breaker of the installation's endpoint or another business's.
"""

from __future__ import annotations

from collections import OrderedDict

from django.conf import settings

from assistant.llm.client import Endpoint, LLMClient
from assistant.models import AssistantSettings
from inbox.platform import egress

# The metrics' `endpoint` label for a business's own endpoint: one bounded value next to
# "primary"/"secondary" (the `replica` label names its host, as for the installation's).
BUSINESS_ENDPOINT = "business"
DEFAULT_MODEL = "assistant"
MAX_CACHED = 256

_clients: OrderedDict[tuple[object, ...], LLMClient] = OrderedDict()


def business_endpoint(config: AssistantSettings) -> Endpoint | None:
    """The business's endpoint, or None when it uses the installation's."""
    url = config.model_base_url.strip().rstrip("/")
    if not url:
        return None
    return Endpoint(
        BUSINESS_ENDPOINT,
        (url,),
        config.model_name.strip() or DEFAULT_MODEL,
        config.model_api_key,
        config.model_structured_output or "json_schema",
        egress_checked=True,
    )


def client_for(config: AssistantSettings) -> LLMClient | None:
    """The client for this business's turns (cached per endpoint and settings: it holds
    connection pools). Raises EgressRefused when its URL no longer passes the allow-list."""
    endpoint = business_endpoint(config)
    if endpoint is None and not settings.LLM_BASE_URL:
        return None
    if endpoint is not None:
        egress.check(endpoint.base_urls[0])  # the name may resolve elsewhere since it was saved
    key = (
        endpoint,
        *(getattr(settings, name) for name in sorted(dir(settings)) if name.startswith("LLM_")),
    )
    client = _clients.get(key)
    if client is None:
        client = _clients[key] = LLMClient.from_settings(endpoint=endpoint)
        while len(_clients) > MAX_CACHED:
            _clients.popitem(last=False)
    else:
        _clients.move_to_end(key)
    return client
