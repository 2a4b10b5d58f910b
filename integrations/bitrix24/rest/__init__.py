"""Talking to a Bitrix24 portal over REST: the bottom of the Bitrix24 package.

`client` (the only module that makes REST calls: one call, a batch, pagination, with the
platform's retry rule), `batch` (batch commands and reading their answer), `auth` (webhook or
OAuth application, the token refresh, the egress check of portal URLs), `errors` (transient or
permanent, the platform's `Transient` / `Permanent`), `limiter` (the portal's request bucket,
shared by every worker in Redis: pacing, not retrying), `phpquery` (PHP's query-string
encoding) and `connection` (a ready client per business).

It imports the platform (`inbox.platform`: egress, http, redis) and the package's own models;
nothing of crm/, sync/, inbound/, openlines/ or setup/, which are layered above it.
"""
