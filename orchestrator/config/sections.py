"""The smaller tables of the config: ``[memory]``, ``[jobs]``, ``[bedrock]`` and ``[vertex]``.

Like every config model, their field docstrings are the key reference of
docs/configuration.md (``python -m orchestrator.config.doc``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "JOBS_MAX_JOBS_LIMIT",
    "JOBS_MAX_SPOOL_BYTES_LIMIT",
    "BedrockConfig",
    "JobsConfig",
    "MemoryConfig",
    "VertexConfig",
]


class MemoryConfig(BaseModel):
    """Where ``knowledge/*.md`` lives and whether resident knowledge is injected."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    enabled: bool = True
    """Knowledge records are read: the memory tools are offered to the model and resident
    records are listed in the system prompt."""
    workspace_root: Path | None = None
    """The folder that holds ``knowledge/``; the pod's workspace when unset."""


JOBS_MAX_JOBS_LIMIT = 64
JOBS_MAX_SPOOL_BYTES_LIMIT = 1024 * 1024 * 1024
# Upper bounds for any source, as for checkpoints: a repository's config may tune the limits
# of background jobs, not make the pod keep an unbounded number of them or of their output.


class JobsConfig(BaseModel):
    """The ``[jobs]`` table: limits of background jobs (``bash`` with ``background: true``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    max_jobs: int = Field(default=8, ge=1, le=JOBS_MAX_JOBS_LIMIT)
    """Background jobs that may run at once; a start past it is refused with an error naming
    the running ones (at most 64)."""
    max_spool_bytes: int = Field(default=64 * 1024 * 1024, gt=0, le=JOBS_MAX_SPOOL_BYTES_LIMIT)
    """Output of one job kept in its spool file; what it prints past this is read and dropped
    (counted, so the job never blocks), at most 1 GiB."""


_REGION = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
# A region is spliced into the endpoint's host name by the SDK (``bedrock-runtime.{region}.
# amazonaws.com``, ``{region}-aiplatform.googleapis.com``): anything but letters, digits and
# dashes could move the host, and the signed request and its credentials with it.


class BedrockConfig(BaseModel):
    """The ``[bedrock]`` table: ``provider = "bedrock"`` (docs/providers.md). Only your own
    config sets it: it picks credentials and the endpoint."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    region: str | None = Field(default=None, pattern=_REGION)
    """The AWS region (``us-east-1``); unset: ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else
    the profile's region."""
    profile: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.@+=,-]{1,128}$")
    """A named profile of your AWS config and credentials files; unset: the AWS environment
    variables and files as the AWS SDKs read them (the default chain)."""


class VertexConfig(BaseModel):
    """The ``[vertex]`` table: ``provider = "vertex"`` (docs/providers.md). Only your own
    config sets it: it picks the project billed and the endpoint."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    project_id: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
    """The Google Cloud project; unset: ``ANTHROPIC_VERTEX_PROJECT_ID``, else the project of
    your application-default credentials."""
    region: str | None = Field(default=None, pattern=_REGION)
    """The Vertex AI region (``us-east5``, ``europe-west1``, ``global``); unset:
    ``CLOUD_ML_REGION``."""
