"""Benchmarks of the pod runtime: each ``bench.<name>`` module prints one JSON object.

``python -m bench`` runs them all (each in its own subprocess), prints a table and writes
``bench/results/latest.json``. See ``bench/README.md`` for what each one measures.
"""

BENCHMARKS: tuple[str, ...] = (
    "startup",
    "context",
    "context_economy",
    "fs_read",
    "checkpoint",
    "sandbox",
    "hooks",
    "memory",
    "reload",
    "session_writes",
    "round_overhead",
    "web_overhead",
    "fanout",
    "pause_latency",
    "acp",
    "mcp",
    "subpods",
    "host",
    "http",
    "pressure",
    "peers",
)
"""Module names under ``bench``, in the order ``python -m bench`` runs them."""

STANDALONE: tuple[str, ...] = ("kill9", "fleet_overhead", "fleet_kill")
"""Long scripts run on their own (``python -m bench.kill9 --turns 100``), not by the suite;
``fleet_overhead`` and ``fleet_kill`` need the ``fleet`` extra (Ray) and start Ray clusters
(``fleet_kill`` two nodes, one of which it kills)."""

__all__ = ["BENCHMARKS", "STANDALONE"]
