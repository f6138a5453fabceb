"""One pod as a process serves it: built from its configuration (``assemble``), its session
opened (``session``), served on its socket (``serve``) with its sandbox and MCP servers
(``outside``), reporting up to a parent pod (``upward``), and its ``task`` children started
as processes of their own (``child_launch``).

``serve_pod`` is what ``pod serve`` runs; a host opens each of its pods with ``open_pod``.
"""

from orchestrator.serving.pod.assemble import (
    Pod,
    PodSetupError,
    build_pod,
    command_hooks,
    make_provider,
)
from orchestrator.serving.pod.outside import served_sockets, start_mcp_servers
from orchestrator.serving.pod.serve import (
    STOP_SIGNALS,
    SWITCH_INTERVAL_S,
    Hosting,
    ServedPod,
    drop_reply,
    open_pod,
    prepare_process,
    serve_pod,
    write_pod_info,
)
from orchestrator.serving.pod.session import (
    crash_results,
    open_session,
    open_session_async,
    prepare_history,
)
from orchestrator.serving.pod.upward import UpwardReporter

__all__ = [
    "STOP_SIGNALS",
    "SWITCH_INTERVAL_S",
    "Hosting",
    "Pod",
    "PodSetupError",
    "ServedPod",
    "UpwardReporter",
    "build_pod",
    "command_hooks",
    "crash_results",
    "drop_reply",
    "make_provider",
    "open_pod",
    "open_session",
    "open_session_async",
    "prepare_history",
    "prepare_process",
    "serve_pod",
    "served_sockets",
    "start_mcp_servers",
    "write_pod_info",
]
