"""``<root>/fleet.json``: which Ray cluster a fleet lives on, and whether it started that
cluster's head; ``<root>/ray-token``: the Ray token of a head it started.

``pod fleet up`` writes both (0600); ``status``, ``add`` and ``down`` given ``--root`` read
them, so they act on that fleet's cluster and never on whichever cluster Ray finds first.
Pure: no Ray here.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from pydantic import BaseModel, ValidationError

from orchestrator.serving.fleet.directory import FleetError

FLEET_FILE = "fleet.json"
TOKEN_FILE = "ray-token"


class FleetFile(BaseModel):
    """What ``<root>/fleet.json`` holds."""

    address: str
    """The Ray cluster's GCS address (``host:port``)."""
    started_head: bool
    """True when ``pod fleet up`` started that head (``pod fleet down`` stops it then, and
    only then)."""
    ray_dir: str | None = None
    """The temp dir of the head it started (how ``down`` finds that head's processes)."""
    ray_client_port: int = 0
    """That head's Ray client server port (its one process that does not name the dir)."""
    token_path: str | None = None
    """The file holding the cluster's Ray token, when Ray's token authentication is on."""
    listen: str | None = None
    """The address a head it started listens on for other machines; None: loopback only."""


def fleet_file(root: Path) -> Path:
    """Where a fleet under ``root`` keeps its :class:`FleetFile`."""
    return root.expanduser() / FLEET_FILE


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (0600 from the first byte: the
    file is made under a temporary name with that mode, then renamed over ``path``)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise


def write_fleet_file(root: Path, record: FleetFile) -> Path:
    """Save ``record`` as ``<root>/fleet.json`` (0600); its path."""
    path = fleet_file(root)
    write_private(path, record.model_dump_json(indent=2) + "\n")
    return path


def read_fleet_file(root: Path) -> FleetFile | None:
    """The fleet under ``root``, or None when it has no ``fleet.json``. :class:`FleetError`
    when the file is there but unreadable (a person should look at it, not have it
    overwritten)."""
    path = fleet_file(root)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FleetError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return FleetFile.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise FleetError(
            f"{path} is not a fleet file ({first['msg']}); remove it if no fleet uses it"
        ) from None


def remove_fleet_files(root: Path) -> None:
    """Forget the fleet under ``root``: its ``fleet.json`` and its Ray token."""
    for name in (FLEET_FILE, TOKEN_FILE):
        with contextlib.suppress(FileNotFoundError):
            (root.expanduser() / name).unlink()


def new_ray_token(root: Path) -> Path:
    """A fresh Ray token in ``<root>/ray-token`` (0600, replacing an old one); its path."""
    path = root.expanduser() / TOKEN_FILE
    write_private(path, secrets.token_hex(32))
    return path


__all__ = [
    "FLEET_FILE",
    "TOKEN_FILE",
    "FleetFile",
    "fleet_file",
    "new_ray_token",
    "read_fleet_file",
    "remove_fleet_files",
    "write_fleet_file",
    "write_private",
]
