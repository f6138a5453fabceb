"""``pod fleet up|status|down|add``: a fleet of pod hosts on Ray (docs/fleet.md). Ray is the
``fleet`` extra, imported only when one of these runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.errors import CliError
from cli.start_options import SETTINGS, PodSettings, options_into


def _ray() -> None:
    """Fail with what to install when Ray is missing."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise CliError(
            "pod fleet needs Ray: pip install -e '.[fleet]' (or pip install 'ray[default]==2.60.*')"
        ) from None


RootOpt = Annotated[
    Path | None,
    typer.Option(
        help="The fleet's directory, as given to `pod fleet up`: act on the Ray cluster its "
        "fleet.json names."
    ),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        help="The Ray cluster (host:port). Default: the one --root names, else the only one "
        "running on this machine (with several, the command refuses and lists them)."
    ),
]


def _attach(root: Path | None, address: str | None) -> Any:
    """Join the cluster the command acts on (:func:`orchestrator.serving.fleet.clusters.choose`);
    the :class:`~orchestrator.serving.fleet.clusters.Target`."""
    from orchestrator.serving.fleet import FleetError
    from orchestrator.serving.fleet.clusters import choose, local_clusters
    from orchestrator.serving.fleet.driver import connect

    resolved = root.expanduser().resolve() if root is not None else None
    try:
        clusters = [] if resolved is not None or address is not None else local_clusters()
        target = choose(resolved, address, clusters)
        connect(target.address, token_path=target.fleet.token_path if target.fleet else None)
    except (FleetError, ConnectionError) as exc:
        raise CliError(str(exc)) from None
    return target


def up(
    root: Annotated[
        Path,
        typer.Option(
            help="Shared storage every node sees: sessions, spools, sockets; also where "
            "fleet.json and the Ray token are kept."
        ),
    ] = Path("~/.local/state/pod/fleet"),
    address: Annotated[
        str | None,
        typer.Option(help="Join this Ray cluster (host:port); default: start one here."),
    ] = None,
    listen: Annotated[
        str | None,
        typer.Option(
            help="A head started here listens on this address, for other machines to "
            "join (default: loopback only, one machine)."
        ),
    ] = None,
    hosts_per_node: Annotated[int, typer.Option(min=1, max=16)] = 2,
    tcp_port: Annotated[
        int, typer.Option(help="Gateways also listen on TCP from this port (0: none).")
    ] = 0,
    num_cpus: Annotated[int, typer.Option(help="CPUs of a head node started here.")] = 1,
    port: Annotated[
        int, typer.Option(help="The GCS port of a head started here (0: a free one).")
    ] = 6379,
    ray_dir: Annotated[Path, typer.Option(help="Temp dir of a Ray head started here.")] = Path(
        "/tmp/ray"
    ),
    shared: Annotated[
        list[Path] | None,
        typer.Option(
            help="A directory every node sees (repeatable): pods with workspaces under it "
            "(or under --root) may run on any node; others stay on their machine."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Start (or join) a Ray cluster on this machine and put the fleet's hosts and a
    gateway on every node; <root>/fleet.json names the cluster for later commands."""
    _ray()
    from orchestrator.serving.fleet import FleetError
    from orchestrator.serving.fleet.cluster import deploy, head_of, start_head
    from orchestrator.serving.fleet.clusters import is_loopback
    from orchestrator.serving.fleet.driver import answers, connect
    from orchestrator.serving.fleet.fleetfile import (
        FleetFile,
        new_ray_token,
        read_fleet_file,
        write_fleet_file,
    )

    if listen is not None and is_loopback(listen):
        # Ray keeps its servers on loopback for 127.0.0.1 alone: 127.0.0.2 would open
        # every interface, the opposite of what a loopback address says.
        raise CliError(
            f"--listen {listen}: a head listens on 127.0.0.1 only without --listen; "
            "--listen takes the address other machines reach this one at"
        )
    root = root.expanduser().resolve()
    try:
        record = read_fleet_file(root)
        if address is not None and record is not None and record.address != address:
            if answers(record.address) is None:
                raise CliError(
                    f"{root} is the fleet of the Ray cluster {record.address}, which runs: "
                    f"`pod fleet down --root {root}` first, or give another --root"
                )
            record = None
        if address is not None and record is None:
            record = FleetFile(address=address, started_head=False)
        elif record is None or answers(record.address) is not None:
            # No fleet here yet, or its cluster is gone: a head of its own.
            token = new_ray_token(root)
            head = start_head(
                ray_dir.expanduser().resolve(),
                token_path=token,
                num_cpus=num_cpus,
                port=port or None,
                listen=listen,
            )
            record = FleetFile(
                address=head.address,
                started_head=True,
                ray_dir=str(head.temp_dir),
                ray_client_port=head.client_port,
                token_path=str(token),
                listen=listen,
            )
        # Written before the fleet is deployed: a deploy that fails still leaves a head
        # that `pod fleet down --root` must find and stop.
        write_fleet_file(root, record)
        connect(record.address, token_path=record.token_path)
        out = deploy(
            root,
            hosts_per_node=hosts_per_node,
            tcp_port=tcp_port,
            shared=[path.expanduser().resolve() for path in shared or []],
            head=head_of(record.ray_dir, record.ray_client_port)
            if record.started_head and record.ray_dir
            else None,
        )
    except (FleetError, ConnectionError) as exc:
        raise CliError(str(exc)) from None
    out.update(record.model_dump())
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    _print_up(root, out)


def show(
    root: RootOpt = None,
    address: AddressOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Hosts, pods, and where each pod lives now."""
    _ray()
    from orchestrator.serving.fleet import FleetError
    from orchestrator.serving.fleet.cluster import status

    _attach(root, address)
    try:
        report = status()
    except (FleetError, ConnectionError) as exc:
        raise CliError(str(exc)) from None
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    typer.echo(f"nodes: {len(report.nodes)}")
    for host in report.hosts:
        where = host.node[:8] if host.node else "not answering"
        typer.echo(f"  host {host.name}  node {where}  pid {host.pid}  pods {host.pods}")
    for pod in report.pods:
        node = pod.node[:8] if pod.node else "-"
        pinned = f"  pinned to {pod.pinned_machine}" if pod.pinned_machine else ""
        typer.echo(
            f"  pod {pod.pod}  {pod.state}  host {pod.host or '-'}  node {node}  "
            f"epoch {pod.epoch}{pinned}"
        )
        if pod.why:
            typer.echo(f"    {pod.why}")


@options_into("settings", PodSettings, SETTINGS)
def add(
    workspace: Annotated[Path, typer.Argument(help="The pod's workspace.")],
    name: Annotated[str | None, typer.Option(help="The pod's name.")] = None,
    settings: PodSettings = PodSettings(),  # noqa: B008 (replaced by the options)
    root: RootOpt = None,
    address: AddressOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Add a pod to the fleet, configured as `pod serve` in its workspace would be (your
    config file, the workspace's, these options); prints the gateway socket of this node
    to reach it."""
    _ray()
    from orchestrator.config.loading import ConfigError, load_config
    from orchestrator.config.paths import config_file, user_config_file
    from orchestrator.serving.fleet import FleetError
    from orchestrator.serving.fleet.cluster import live_nodes
    from orchestrator.serving.fleet.directory import Directory
    from orchestrator.serving.fleet.gateway import gateway_dir
    from orchestrator.serving.fleet.raykv import RayKV
    from orchestrator.serving.host import HostError, ask_host

    workspace = workspace.resolve()
    try:
        # The host actor has no command line and may run on another machine: the whole
        # configuration travels with the pod, read here as `pod serve` reads it.
        config = load_config(
            workspace,
            name=name,
            **settings.overrides(),
        )
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    files = [str(p) for p in (user_config_file(), config_file(workspace)) if p.is_file()]
    _attach(root, address)
    import ray

    node = ray.get_runtime_context().get_node_id()
    if node not in live_nodes():
        raise CliError("this process is not on a live node of the cluster")
    try:
        fleet_root = Path(Directory(RayKV()).settings().root)
    except FleetError as exc:
        raise CliError(str(exc)) from None
    control = gateway_dir(fleet_root, node) / "control.sock"
    try:
        row = asyncio.run(ask_host("load", {"config": config.portable()}, path=control))
    except HostError as exc:
        raise CliError(str(exc)) from None
    row["config_files"] = files
    if as_json:
        typer.echo(json.dumps(row, indent=2))
        return
    _print_added(row, list(config.load_warnings))


def down(
    root: RootOpt = None,
    address: AddressOpt = None,
    keep_ray: Annotated[
        bool, typer.Option("--keep-ray", help="Leave the Ray cluster running.")
    ] = False,
) -> None:
    """Unload every pod to its session, stop the fleet's actors, then the Ray head that
    this fleet's `pod fleet up` started (a cluster it joined keeps running)."""
    _ray()
    import ray

    from orchestrator.serving.fleet import FleetError
    from orchestrator.serving.fleet.cluster import head_of, teardown
    from orchestrator.serving.fleet.driver import answers
    from orchestrator.serving.fleet.fleetfile import read_fleet_file, remove_fleet_files

    if root is not None and address is None:
        try:
            stale = read_fleet_file(root.expanduser().resolve())
        except FleetError as exc:
            raise CliError(str(exc)) from None
        why = answers(stale.address) if stale is not None else None
        if stale is not None and why is not None:
            # Its cluster is gone (a reboot, a killed head): nothing to unload; what is
            # left of a head it started is stopped, and the fleet forgotten.
            if stale.started_head and stale.ray_dir:
                head_of(stale.ray_dir, stale.ray_client_port).stop()
            remove_fleet_files(root.expanduser().resolve())
            typer.echo(
                f"fleet forgotten: its Ray cluster {stale.address} no longer answers ({why})"
            )
            return
    target = _attach(root, address)
    settings = teardown()
    record = target.fleet
    where = root.expanduser().resolve() if root is not None else None
    if record is None and settings is not None:
        # Named by --address alone: the fleet's own file, when it names this cluster.
        with contextlib.suppress(FleetError):
            found = read_fleet_file(Path(settings.root))
            if found is not None and found.address == target.address:
                record, where = found, Path(settings.root)
    if record is not None:
        started, ray_dir, client_port = (
            record.started_head,
            record.ray_dir,
            record.ray_client_port,
        )
    elif settings is not None:
        started = settings.ray_dir is not None
        ray_dir, client_port = settings.ray_dir, settings.ray_client_port
    else:
        started, ray_dir, client_port = False, None, 0
    stopping = started and ray_dir is not None and not keep_ray
    if record is not None and where is not None and (stopping or not started):
        # Kept with a head left running: the next `up --root` joins it with its token.
        remove_fleet_files(where)
    if stopping and ray_dir is not None:
        ray.shutdown()
        head_of(ray_dir, client_port).stop()
        typer.echo(f"fleet stopped, and the Ray head it started ({ray_dir})")
    elif started:
        typer.echo(f"fleet stopped (its Ray head keeps running: {ray_dir})")
    else:
        typer.echo(f"fleet stopped (Ray keeps running at {target.address}: not its head)")


def register(app: typer.Typer) -> None:
    """Add the ``fleet`` command group."""
    group = typer.Typer(
        help="A fleet of pod hosts on Ray: any node serves any client (docs/fleet.md)."
    )
    app.add_typer(group, name="fleet")

    group.command("up")(up)
    group.command("status")(show)
    group.command("add")(add)
    group.command("down")(down)


def _print_up(root: Path, out: dict[str, Any]) -> None:
    """What ``pod fleet up`` did, for a person."""
    if out["started_head"]:
        reach = f"listening on {out['listen']}" if out["listen"] else "on loopback only"
        how = f"a Ray head started here, {reach}, Ray token in {out['token_path']}"
    else:
        how = "a cluster it joined"
    typer.echo(f"fleet up on Ray cluster {out['address']} ({how})")
    typer.echo(f"  root {root}  (fleet.json there names the cluster)")
    for node, gateway in sorted(out["gateways"].items()):
        tcp = f"  tcp 127.0.0.1:{gateway['tcp_port']}" if gateway.get("tcp_port") else ""
        typer.echo(f"  node {node[:8]}: gateway {gateway['dir']}{tcp}")
    typer.echo(f"next: pod fleet add WORKSPACE --root {root}")


def _print_added(row: dict[str, Any], warnings: list[str]) -> None:
    """What ``pod fleet add`` did, for a person: the pod, the config files it read, its
    socket, how to talk to it."""
    config = row.get("config", {})
    sandbox = config.get("sandbox", {}).get("mode", "?")
    matchers = [m for entries in (config.get("hooks") or {}).values() for m in entries]
    hooks = sum(len(matcher.get("hooks", [])) for matcher in matchers)
    typer.echo(f"pod {row['pod']} added: workspace {config.get('workspace')}")
    files = ", ".join(row["config_files"]) or "none (the defaults)"
    typer.echo(f"  config files: {files}")
    typer.echo(f"  sandbox {sandbox}, hooks {hooks}, provider {config.get('provider') or 'auto'}")
    for warning in warnings:
        typer.echo(f"  warning: {warning}")
    typer.echo(f"  socket {row['socket']}")
    typer.echo(f"next: pod chat --socket {row['socket']}")
