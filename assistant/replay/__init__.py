"""Replay: past turns of a business answered again with a candidate change, nothing sent."""
