"""The Celery application. Queues split by workload so each can be scaled on its own hosts."""

from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inbox.settings")

app = Celery("inbox")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [
    Queue("default"),
    Queue("assistant"),
    Queue("speech"),
    Queue("integrations"),
]
app.autodiscover_tasks()
