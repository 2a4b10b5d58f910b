"""Linked-device gateways businesses already run for an existing number: Evolution API
(`evolution`) and WAHA (`waha`). Each reads its gateway's webhooks into the same normalised
`InboundEvent`s the bridge gives (so dedup, the durable stream, takeover from the phone and the
debounce are the bridge's), and is a transport (`inbox.conversations.transports.Transport`)
that sends through the gateway's REST API, with a connection check for the channel page.
"""
