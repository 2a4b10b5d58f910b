"""Bitrix24 CRM sync: the only package that talks to Bitrix24.

client.py (HTTP, the only module that does it), limiter.py (shared bucket), push.py (chats and
handoffs to the CRM), pull.py (CRM changes back), reconcile.py, offline.py, imconnector.py,
hooks.py (what the inbox calls), tasks.py (Celery), views.py (the event handler).
"""
