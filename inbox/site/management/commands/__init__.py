"""`manage.py` commands of the site shell: they may wire any package, as the shell does."""
