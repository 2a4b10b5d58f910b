"""Offline evaluation: the golden conversations (`golden/*.json`) scored by `runner` (`manage.py
assistant_eval`), the eval's own amount judge (`judge`, independent of the guardrail it is
meant to check) and the guardrail corpus (`guardrail_corpus`: right and wrong replies, both
errors of the guardrail measured). Layer `eval`, beside `turn`: may import `speech`,
`decision`, `llm`, `knowledge`, `capacity` and the floor; never `tasks` or `replay`."""
