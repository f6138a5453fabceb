"""Benchmarks of the pod runtime: each ``bench.<name>`` module prints one JSON object.

``python -m bench`` runs them all (each in its own subprocess), prints a table and writes
``bench/results/latest.json``. See ``bench/README.md`` for what each one measures.
"""

BENCHMARKS: tuple[str, ...] = (
    "startup",
    "context",
    "memory",
    "round_overhead",
    "fanout",
    "pause_latency",
    "peers",
)
"""Module names under ``bench``, in the order ``python -m bench`` runs them."""

__all__ = ["BENCHMARKS"]
