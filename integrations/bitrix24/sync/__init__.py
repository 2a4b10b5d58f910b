"""Chats and handoffs to Bitrix24: `outbox.py` (the work recorded on each chat's `CrmLink`, and
its claims and retries), `push.py` (the rounds that move many chats at once in batches), one
chat's pass in `work.py` (its state and step codes), `plan.py` (what it sends next) and
`steps.py` (`LinkSync`: the plan plus what the answers mean), and `full_sync.py` (the progress of
checking every chat).

Below the feature layers and above the CRM mapping: may import `crm/`, `rest/`, the package's
models and the conversation core; never `inbound/`, `openlines/` or `setup/` (the Bitrix24
contract in pyproject.toml).
"""
