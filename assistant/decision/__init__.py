"""One turn's decision: `brain` (the model through the LLM client, or the offline catalogue
assistant: `catalogue` with `intents`, `reading` and `replies`), `guardrails` (every number and
promise in a reply proven) and `escalation` (late, unclear voice, blocked, model down: a
person takes the chat). Layer `decision`: may import `llm`, `knowledge`, `capacity` and the
floor (`language`, `schema`, `models`), and the core (`inbox.conversations`,
`inbox.platform`); never `speech`, `turn`, `eval`, `tasks` or `replay`."""
