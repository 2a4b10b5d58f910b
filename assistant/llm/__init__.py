"""The LLM client: everything the assistant says to a model server and reads back.

`client` (the chain of endpoints, retries with the platform's rule, failover, repair of invalid
output; what callers import), `endpoints` (the configured endpoints and one `openai` client per
replica, its HTTP client from `inbox.platform.http`), `wire` (the request's structured-output
format, reading streamed or whole answers, parsing a Decision), `errors` (what goes wrong,
derived from the platform's `Transient` / `Permanent`), `resilience` (circuit breakers and
admission slots shared in Redis), `prompt` (the prompt and its budget), `business` (a
business's own endpoint), `health` and `metrics`.

It imports the assistant's lower layers (knowledge, capacity, language, schema, models) and the
platform (`inbox.platform`); never decision, speech, the turn or the tasks above it.
"""
