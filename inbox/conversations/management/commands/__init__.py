"""`manage.py ingest_worker` and `debounce_scheduler` (the core's long-lived processes),
`create_channel`, `add_member` and `remove_member` (set-up from the shell). Each parses its
arguments and calls one function of the core."""
