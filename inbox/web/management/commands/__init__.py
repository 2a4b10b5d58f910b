"""`manage.py` commands of the web UI; each is thin over a web UI module."""
