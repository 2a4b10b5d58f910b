"""What open inbox pages are told, and the socket they hear it on.

`realtime` is the one place that pushes (Channels groups, the per-business event log);
`fanout` delivers a business's events once per process; `consumers` is the page's websocket;
`presence` says who has a chat open; `dashboard_push` and `notify` listen to the core's hooks
(subscribed by the site shell) and push the changed fragments and the desktop notifications.

Imports the core (`inbox.conversations`), `inbox.platform` and the rest of the web UI; the web
UI's page views import `realtime` for the event log's replay.
"""
