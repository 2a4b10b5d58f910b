"""The garbage collector's settings for the long-lived processes: web servers and the consumer."""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Call once the process has loaded what it keeps for its life (Django, the apps, models,
    templates), before it serves.

    Frozen, a full collection no longer walks that heap. Unfrozen, daphne's first full
    collections after a hundred dashboards connected took 96-149 ms (gc.callbacks in
    bench/fanout.py), a stall every request and socket of the process waited out, and the
    consumer spent ~35 µs an event in generation-2 collections.

    A young collection every 20,000 allocations instead of 700: a batch of a hundred events, or a
    burst rendered to a hundred sockets, makes tens of thousands of short-lived objects, and at
    the default most collections found nothing to free (4 % of the consumer's instructions per
    event, counted by valgrind at 1,000 chats). What lives on is still collected. Alternating
    `bench/fanout.py --clients 100,500` runs (2026-12-06): 100 bursty p99 105.9 / 101.4 ms with
    it against 108.4 / 109.1 without, 500 bursty 265 / 249 against 273 / 314.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)
