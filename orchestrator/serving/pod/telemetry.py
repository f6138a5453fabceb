"""A pod's telemetry, wired to what the pod already has (docs/telemetry.md).

:mod:`.assemble` imports this module only when ``[telemetry]`` or the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` variable asks for it, so a pod without it never imports
OpenTelemetry. What is wired: the provider (a ``chat`` span per request), the transcript's tap
(turns, tool results, compactions, rewinds, pauses), the tool runner's start seam, the hook
commands' records, and, once the controller exists, a listener on its machine.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.adapters.providers.base import Provider
from orchestrator.adapters.session.records import HookRecord
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.config.model import PodConfig
from orchestrator.core.usage import TokenUsage
from orchestrator.runtime.controller import Controller
from orchestrator.runtime.status import session_cost
from orchestrator.runtime.tool_runner import ToolRunner
from orchestrator.runtime.transcript import Transcript

if TYPE_CHECKING:
    from orchestrator.adapters.telemetry import PodTelemetry

__all__ = ["PodTracing", "trace_pod"]

log = logging.getLogger(__name__)

EXTRA_MISSING = (
    "telemetry is configured ({where}) but OpenTelemetry is not installed: install the otel "
    "extra (pip install 'pod-orchestrator[otel]'); the pod runs without telemetry"
)

ELSEWHERE = (
    "telemetry goes to {used!r}, the collector the first pod of this process was given; "
    "this pod's {asked!r} is used once the process restarts (pod host stop)"
)


@dataclass
class PodTracing:
    """What :func:`trace_pod` wired: the provider to build the pod with, and the recorder
    to attach to its machine."""

    provider: Provider
    recorder: PodTelemetry
    """The pod's spans and metrics."""

    def attach(self, controller: Controller) -> None:
        """Listen to the controller's machine (state changes are span events and a metric)."""
        controller.machine.add_listener(self.recorder)  # type: ignore[no-untyped-call]


def trace_pod(
    config: PodConfig,
    endpoint: str,
    *,
    provider: Provider,
    transcript: Transcript,
    runner: ToolRunner,
    chain: InterceptorChain,
    session_path: Path,
) -> PodTracing | None:
    """Instrument a pod being built; None (with an alert) when OpenTelemetry is missing."""
    try:
        from orchestrator.adapters.telemetry import PodTelemetry, TracedProvider, start_telemetry
    except ImportError:
        where = f"[telemetry] otlp_endpoint = {endpoint!r}" if endpoint else "OTEL_* variables"
        transcript.alert("warn", "pod", EXTRA_MISSING.format(where=where))
        return None
    process = start_telemetry(endpoint)
    if process.endpoint != endpoint:
        # One SDK per process: a host's pods share the first one's collector.
        transcript.alert("warn", "pod", ELSEWHERE.format(used=process.endpoint, asked=endpoint))

    def cost(model: str, usage: TokenUsage) -> float | None:
        return session_cost(config, model, usage)

    recorder = PodTelemetry(
        tracer=process.tracer,
        metrics=process.metrics,
        pod_name=config.pod_name(),
        session_id=session_path.stem,
        provider_name=provider.name,
        log_content=config.telemetry.log_content,
        cost=cost,
    )
    process.health.listen(_alert_sink(transcript))
    transcript.tap = recorder.observe
    runner.on_start = recorder.tool_started
    commands = chain.commands
    if commands is not None:
        record = commands.record

        async def record_traced(hook: HookRecord) -> None:
            await record(hook)
            recorder.hook_recorded(hook)

        commands.record = record_traced
    return PodTracing(provider=TracedProvider(provider, recorder), recorder=recorder)


def _alert_sink(transcript: Transcript) -> Callable[[str, str], bool]:
    """The collector's outages as this pod's alerts, from the exporter's thread to the pod's
    loop; the sink lets go of the transcript, and says so once it is gone."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None  # built outside a loop (a test's pod): outages are only logged
    held = weakref.ref(transcript)

    def sink(level: str, message: str) -> bool:
        target = held()
        if target is None or loop is None or loop.is_closed():
            log.warning("%s", message)
            return target is not None and loop is not None and not loop.is_closed()
        loop.call_soon_threadsafe(target.alert, level, "telemetry", message)
        return True

    return sink
