"""The assistant: price-list knowledge, the LLM client, the decision with its guardrails,
speech, and the turn that runs them for a chat.

Imports run downwards only (the "The assistant" contract in pyproject.toml), each layer
importing only the layers below it:

    tasks | replay               Celery entry points; replaying past turns with a candidate
    turn | eval                  one turn of a chat; the offline evaluation
    speech                       voice notes to text
    decision                     brain, catalogue assistant, guardrails, escalation
    llm                          the model client, its prompt and resilience
    knowledge | capacity         price lists, matching, money, rules; vLLM sizing
    language | schema | models   the floor: language detection, the Decision schema, the tables

As a whole the assistant may import `inbox.conversations` and `inbox.platform` and nothing
above it (`inbox.upkeep`, `inbox.web`, the integrations, `inbox.site`). `admin`, `apps`,
`demo`, `management`, `templatetags` and `migrations` are entry points (Django's, or the demo
seed's) outside the layers; nothing in the layers imports them.
"""
