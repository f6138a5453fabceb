"""Ray's internal KV (kept by the head node's GCS) as the fleet's :class:`KV`."""

from __future__ import annotations

from ray.experimental import internal_kv

from orchestrator.serving.fleet.directory import NAMESPACE


class RayKV:
    """The fleet's keys in Ray's internal KV, in the fleet's namespace. Usable in any process
    connected to the cluster (a driver, an actor)."""

    def get(self, key: str) -> bytes | None:
        """The value, or None."""
        return internal_kv._internal_kv_get(key, namespace=NAMESPACE)

    def put(self, key: str, value: bytes, *, overwrite: bool = True) -> bool:
        """Store the value; True when the key existed before."""
        return bool(
            internal_kv._internal_kv_put(key, value, overwrite=overwrite, namespace=NAMESPACE)
        )

    def exists(self, key: str) -> bool:
        """Whether the key is set."""
        return bool(internal_kv._internal_kv_exists(key, namespace=NAMESPACE))

    def keys(self, prefix: str) -> list[str]:
        """Every key that starts with ``prefix``."""
        found = internal_kv._internal_kv_list(prefix, namespace=NAMESPACE)
        return [key.decode() if isinstance(key, bytes) else key for key in found]

    def delete(self, key: str) -> None:
        """Remove the key."""
        internal_kv._internal_kv_del(key, namespace=NAMESPACE)
