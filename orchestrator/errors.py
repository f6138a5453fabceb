"""The root of every error the runtime raises on purpose.

::

    OrchestratorError
    ├── SetupError                 the pod cannot start as configured; fix the config or the machine
    │   ├── ConfigError            (config)      bad config file or option
    │   ├── PodSetupError          (pod)         provider or workspace unusable
    │   ├── ServerError            (server)      socket path in use, too long, not permitted
    │   ├── SessionError           (session)     session file unreadable
    │   ├── UnsafePathError        (paths)       runtime dir or log not private (shared, a link)
    │   └── DiagramError           (diagram)     Graphviz missing for svg/png
    └── PodRuntimeError            something failed while the pod runs; the pod keeps running
        ├── ProtocolError          (protocol)    a client line is not a valid method
        ├── TurnError              (turn)        a turn failed (provider, internal)
        ├── ProviderError          (providers)   a model request failed (retryable or not)
        ├── ToolError              (tools)       a tool failure the model reads as is_error
        ├── FsError                (scoped_fs)   a path is out of scope, missing, binary, special…
        ├── PatternError           (safe_regex)  a regex or glob is invalid or unsupported by RE2
        ├── FileRefError           (file_refs)   an @file ref could not be attached
        ├── KnowledgeError         (knowledge)   a knowledge record is malformed
        ├── CheckpointError        (checkpoints) a workspace checkpoint cannot be taken or restored
        ├── WireInvalidError       (validator)   a request the API would reject
        ├── PeerRefused            (peer)        a connecting process is another user's or sandboxed
        └── ClientError            (client)      the pod cannot be reached

Catch ``OrchestratorError`` to handle anything the runtime reports; anything else is a bug.
"""

from __future__ import annotations


class OrchestratorError(Exception):
    """Base of every deliberate runtime error."""


class SetupError(OrchestratorError):
    """The pod cannot start as configured; the message says what to change."""


class PodRuntimeError(OrchestratorError):
    """A failure while the pod runs; the pod itself keeps going."""
