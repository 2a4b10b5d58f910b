"""`manage.py purge_old_data`: the retention rule run from the shell, as the beat runs it."""
