"""Management commands of the site shell (`manage.py seed_demo`)."""
