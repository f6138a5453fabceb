"""Background jobs: commands ``bash`` starts with ``background: true``, owned by the pod.

- :class:`Jobs` (:mod:`.manager`) starts, reads, ends and records them, and says what
  changed: a note for the model at the next round boundary, an alert when a turn is paused
  or cancelled while they run, the ``status`` event's ``jobs`` list.
- :class:`Job` (:mod:`.job`): one job, from its ``start`` record to its ``end``, copying its
  output to its spool.
- :class:`~.crashes.CrashedJobs` (:mod:`.crashes`): the jobs an earlier run of the pod left
  when it died, reported once and then recorded as ended.
- :class:`JobSpools` (:mod:`.spools`): their output files, ``<session>.jobs/<id>.log``.
- :mod:`.report`: the texts, pure and bounded.

The tools that use them (``job_output``, ``job_wait``, ``job_kill``) are in
:mod:`orchestrator.capabilities.tools.jobs`; docs/jobs.md tells the whole story.
"""

from __future__ import annotations

from orchestrator.capabilities.jobs.job import (
    Job,
    JobError,
    JobJournal,
    JobState,
    OutputChunk,
    started_text,
)
from orchestrator.capabilities.jobs.manager import Jobs
from orchestrator.capabilities.jobs.spools import JobSpools

__all__ = [
    "Job",
    "JobError",
    "JobJournal",
    "JobSpools",
    "JobState",
    "Jobs",
    "OutputChunk",
    "started_text",
]
