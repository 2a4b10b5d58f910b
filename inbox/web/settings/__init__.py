"""The settings pages (`/inbox/settings/…` and the review): channels, business, assistant and
model, price list, canned replies and labels, team, replays, and each person's notifications.

Every page but the notifications is for business admins only, and limited to the businesses
they administer (`inbox.web.administered`: 403 for anyone else, 404 for another business's
rows). The pages parse, check and render; the writes are the core's (`inbox.conversations`)
and the assistant's (`assistant.knowledge.price_upload`, `assistant.replay.engine`).

Imports what `inbox.web` may import (`assistant`, `inbox.upkeep`, `inbox.conversations`,
`inbox.platform`, and the rest of the web UI); never `inbox.site` or an integration: the
Bitrix24 settings page lives with its integration (`integrations.bitrix24.settings_page`).
"""
