"""``pod fleet up|status|down|add``: a fleet of pod hosts on Ray (docs/fleet.md). Ray is the
``fleet`` extra, imported only when one of these runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.errors import CliError


def _ray() -> None:
    """Fail with what to install when Ray is missing."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise CliError(
            "pod fleet needs Ray: pip install -e '.[fleet]' (or pip install 'ray[default]==2.60.*')"
        ) from None


def register(app: typer.Typer) -> None:
    """Add the ``fleet`` command group."""
    group = typer.Typer(
        help="A fleet of pod hosts on Ray: any node serves any client (docs/fleet.md)."
    )
    app.add_typer(group, name="fleet")

    @group.command("up")
    def up(
        root: Annotated[
            Path,
            typer.Option(help="Shared storage every node sees: sessions, spools, sockets."),
        ] = Path("~/.local/state/pod/fleet"),
        address: Annotated[
            str | None,
            typer.Option(help="Join this Ray cluster (host:port); default: start one here."),
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
    ) -> None:
        """Start (or join) a Ray cluster on this machine and put the fleet's hosts and a
        gateway on every node."""
        _ray()
        from orchestrator.fleet import FleetError
        from orchestrator.fleet.cluster import connect, deploy, start_head

        head = None
        try:
            if address is None:
                head = start_head(
                    ray_dir.expanduser().resolve(), num_cpus=num_cpus, port=port or None
                )
                address = head.address
            connect(address)
            out = deploy(
                root.expanduser(),
                hosts_per_node=hosts_per_node,
                tcp_port=tcp_port,
                shared=[path.expanduser().resolve() for path in shared or []],
                head=head,
            )
        except FleetError as exc:
            raise CliError(str(exc)) from None
        out["address"] = address
        typer.echo(json.dumps(out, indent=2))

    @group.command("status")
    def show(
        address: Annotated[str, typer.Option(help="The Ray cluster.")] = "auto",
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """Hosts, pods, and where each pod lives now."""
        _ray()
        from orchestrator.fleet import FleetError
        from orchestrator.fleet.cluster import connect, status

        try:
            connect(address)
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

    @group.command("add")
    def add(
        workspace: Annotated[Path, typer.Argument(help="The pod's workspace.")],
        name: Annotated[str | None, typer.Option(help="The pod's name.")] = None,
        provider: Annotated[str | None, typer.Option()] = None,
        address: Annotated[str, typer.Option(help="The Ray cluster.")] = "auto",
    ) -> None:
        """Add a pod to the fleet; prints the gateway socket of this node to reach it."""
        _ray()
        from orchestrator.fleet import FleetError
        from orchestrator.fleet.cluster import connect, live_nodes
        from orchestrator.fleet.directory import Directory
        from orchestrator.fleet.gateway import gateway_dir
        from orchestrator.fleet.raykv import RayKV
        from orchestrator.host import HostError, ask_host

        try:
            connect(address)
        except (FleetError, ConnectionError) as exc:
            raise CliError(str(exc)) from None
        import ray

        node = ray.get_runtime_context().get_node_id()
        if node not in live_nodes():
            raise CliError("this process is not on a live node of the cluster")
        control = gateway_dir(Path(Directory(RayKV()).settings().root), node) / "control.sock"
        config: dict[str, Any] = {"workspace": str(workspace.resolve())}
        config.update({k: v for k, v in {"name": name, "provider": provider}.items() if v})
        try:
            row = asyncio.run(ask_host("load", {"config": config}, path=control))
        except HostError as exc:
            raise CliError(str(exc)) from None
        typer.echo(json.dumps(row, indent=2))

    @group.command("down")
    def down(
        address: Annotated[str, typer.Option(help="The Ray cluster.")] = "auto",
        keep_ray: Annotated[
            bool, typer.Option("--keep-ray", help="Leave the Ray cluster running.")
        ] = False,
    ) -> None:
        """Unload every pod to its session, stop the fleet's actors, then the Ray head that
        `pod fleet up` started (a cluster it joined keeps running)."""
        _ray()
        import ray

        from orchestrator.fleet import FleetError
        from orchestrator.fleet.cluster import connect, teardown

        try:
            connect(address)
        except (FleetError, ConnectionError) as exc:
            raise CliError(str(exc)) from None
        head = teardown()
        if head is not None and not keep_ray:
            ray.shutdown()
            head.stop()
            typer.echo(f"fleet stopped, and the Ray head it started ({head.temp_dir})")
        else:
            typer.echo("fleet stopped (Ray keeps running)")
