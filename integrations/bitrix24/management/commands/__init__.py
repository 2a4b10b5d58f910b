"""`manage.py bitrix24_configure`, `bitrix24_check` and `bitrix24_sync`: set up, test and run a
business's sync from the shell. Thin: each calls `setup/` or `sync/` and prints the outcome."""
