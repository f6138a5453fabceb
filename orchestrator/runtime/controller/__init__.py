"""The controller: one pod's lifecycle machine, its actions, and the tasks they start.

Laid out as pydantic-ai lays out its agent graph: the fields in one documented dataclass,
the machine's actions in one module, and one module per feature, each a set of functions
over the fields:

* :mod:`.state`: :class:`ControllerState`, every field with its docstring; the turn's start
  phase (:data:`~orchestrator.protocol.TurnPhase`, ``status.phase``) is one of them.
* :mod:`.actions`: :class:`Controller`, the :class:`states.LifecycleModel` surface the machine
  calls on its edges.
* :mod:`.surface`: what the pod's other parts call besides the machine (status, spending,
  commits, round signals, an unload's memory, rewind checks).
* :mod:`.conversation`: committing and counting, the model's window and thinking plan.
* :mod:`.prompt`: a turn's prompt, resolved, held and committed (one place commits it).
* :mod:`.hooks`: the hook phases of a turn's start (``SessionStart``, ``UserPromptSubmit``).
* :mod:`.turn_task`: the turn task, its start phases, then the turn's rounds.
* :mod:`.rewind`: the rewind task and the checkpoints' timing.
* :mod:`.compaction`: the compaction task between turns.
* :mod:`.unload`: what an unload keeps and a load restores.

Why ``Controller`` inherits the dataclass (``Controller`` → ``ControllerSurface`` →
``ControllerState``) rather than holding it: the machine takes the controller as its model
and the pod's other parts read its fields (``controller.transcript``, ``controller.jobs``…);
inheriting keeps those one object without a property per field. The feature modules take
:class:`ControllerState`, not :class:`Controller`, so none of them reaches the machine's
actions or another feature through the object.
"""

from orchestrator.runtime.controller.actions import Controller
from orchestrator.runtime.controller.prompt import held_record, held_submission
from orchestrator.runtime.controller.rewind import rewind_data
from orchestrator.runtime.controller.state import ControllerState, TurnOpening

__all__ = [
    "Controller",
    "ControllerState",
    "TurnOpening",
    "held_record",
    "held_submission",
    "rewind_data",
]
