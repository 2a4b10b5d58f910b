"""Management commands of the web UI (`manage.py create_api_token`)."""
