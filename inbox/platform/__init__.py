"""The platform floor: what every other package stands on and nothing in the product sits under.

Outbound HTTP (`http`, through the `egress` rule), Redis connections (`redis`), logging with
masking (`logs`), Prometheus metrics (`metrics`), the garbage collector's start-up settings
(`heap`) and encrypted model fields (`fields`). Modules here import only the standard library,
third-party packages and Django's settings: never `inbox.*`, `assistant` or `integrations`.
"""
