"""The assistant app's database migrations, written by `makemigrations`. They import only
Django and what their fields name (`assistant.models` defaults, `inbox.platform.fields`)."""
