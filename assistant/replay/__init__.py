"""Replay: past turns of a business answered again with a candidate change, nothing sent.

`candidate` (the change: a staged price list, edited rules, another model) laid over the live
inputs, `engine` (the turns chosen, answered again, compared, applied), `tasks` (the Celery
task that runs one replay). Layer `replay`, at the top beside `tasks`: may import every layer
below it (`turn`, `eval`, `speech`, `decision`, `llm`, `knowledge`, `capacity`, the floor)."""
