"""Speech to text for customers' voice notes.

`transcribe` picks the backend (`embedded`: faster-whisper in the worker; `openai_server`: an
OpenAI-compatible `/audio/transcriptions`, over the platform's pooled HTTP client), `audio`
decodes what arrived, `backend` holds the interface, the transcript and the confidence rule,
and `voice_notes` is the task's body: download, keep, transcribe, record. Backend failures are
`SpeechBackendError`s, transient or permanent (the platform's `Transient` / `Permanent`); the
Celery task retries the transient ones with a countdown.

It imports the assistant's lower layers (decision, llm, knowledge, language, schema, models),
the core (`inbox.conversations`) and the platform; never the turn or the tasks above it.
"""
