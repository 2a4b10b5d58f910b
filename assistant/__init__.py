"""The assistant: price-list knowledge, prompt, LLM client, decision, guardrails, speech, turn."""
