"""The root of every error the runtime raises on purpose, and its tree.

::

    OrchestratorError
    ├── SetupError                 the pod cannot start as configured; fix the config or the machine
    │   ├── ConfigError            (config.model)        bad config file or option
    │   ├── PodSetupError          (serving.pod)         provider or workspace unusable
    │   ├── ServerError            (serving.server)      socket path in use, too long, not permitted
    │   ├── SessionError           (adapters.session)    session file unreadable; SessionLocked
    │   ├── UnsafePathError        (config.paths)        runtime dir or log not private (shared, a link)
    │   ├── ProxyStartError        (adapters.sandbox)    the sandbox's network proxy cannot start
    │   ├── HttpAddressError       (serving.http)        --http / host.http is no [HOST:]PORT, or
    │   │                                                beyond the loopback without --http-public
    │   ├── DiagramError           (cli.diagrams)        Graphviz missing for svg/png
    │   └── PodStartError, ScriptError, InputToolMissing, OptionError  (conformance) the kit
    │                              cannot set up a row, or its options make no sense
    ├── PodRuntimeError            something failed while the pod runs; the pod keeps running
    │   ├── ProtocolError          (protocol)            a client line is not a valid method
    │   ├── TurnError              (runtime.turn)        a turn failed (provider, internal)
    │   ├── CompactionError        (runtime.compaction)  a summary failed; CompactionNotSmaller
    │   ├── UnloadBlocked          (runtime.unload)      the pod may not be unloaded now
    │   ├── RewindError            (core.rewind)         a rewind or fork that cannot be done as asked
    │   ├── ProviderError          (adapters.providers)  a model request failed (retryable or not)
    │   │                                                Config-, Rejected- (PromptTooLong), Stream-
    │   │                                                (IncompleteStreamError)
    │   ├── ToolError              (tools)               a tool failure the model reads; JobError
    │   ├── FsError                (adapters.scoped_fs)  a path is out of scope, missing, binary…
    │   ├── NotARegularFile        (adapters.regular_file) also an OSError: not a regular file
    │   ├── PatternError           (core.safe_regex)     a regex or glob is invalid or unsupported
    │   ├── FileRefError           (runtime.file_refs)   an @file ref could not be attached
    │   ├── DocumentRefused, ThinkingRefused, NotesFull, WireInvalidError  (core) pure refusals
    │   ├── KnowledgeError         (knowledge)           a knowledge record is malformed
    │   ├── CheckpointError        (checkpoints)         a checkpoint cannot be taken or restored
    │   ├── ModeRefused            (permissions.modes)   a permission mode that is none, or wider
    │   │                                                than the configuration allows
    │   ├── SessionWriteError      (adapters.session)    the session cannot be written; SessionFenced
    │   ├── SandboxUnavailable, BadProxyRequest  (adapters.sandbox)  no sandbox here; a bad request
    │   ├── McpServerError         (adapters.mcp)        an MCP server cannot be started or listed
    │   ├── FetchRefused           (adapters.web)        a web_fetch not made or not finished
    │   │                                                (an address, a rule, the size cap)
    │   ├── LibraryRefused         (core.library)        a skill, command or agent file not used
    │   │                                                (its name, place, size, text, frontmatter)
    │   ├── FormError              (adapters.mcp.forms)  also a ValueError: a form MCP cannot ask
    │   ├── ChildFailed, ChildLinkError, TaskRefused, WorktreeError  (subpods)  a sub-pod
    │   │                              failed, could not be reached, or was refused
    │   ├── HostError              (serving.host.control) a request the pod host refuses;
    │   │                                                EvictRefused (a pod stays loaded)
    │   ├── FleetError             (serving.fleet)       a request the fleet refuses
    │   ├── ApiError               (serving.http)        a request the HTTP API refuses (its
    │   │                                                status and code)
    │   ├── LaunchError            (serving.launch)      a pod process could not be started
    │   ├── PeerRefused            (serving.peer)        a connecting process is another user's
    │   └── ClientError            (serving.client)      the pod cannot be reached
    └── CliError                   (cli.errors)          a front-end's failure, one line and an exit
        │                                                code; ConnectionLost
        └── PodLaunchError, PromptRejected, OptionRefused  (cli.acp)  a session's pod cannot
                                                         start; a bad block; a config option
                                                         not offered

Catch ``OrchestratorError`` to handle anything the runtime reports; anything else is a bug.

Signals are not failures and stay outside the tree, each saying so in its docstring: a handler
of failures that caught one would report a deliberate outcome as an error. They are
``ToolsPaused`` (a pause asked for), ``SearchStopped`` and the search tool's ``_Stopped`` (a
stop asked for), ``InputDeclined`` and ``SamplingDeclined`` (an MCP answer), and the conformance kit's
verdicts and answers (``RowFailed``, ``Mismatch``, ``Rejected``, ``ClientGone``,
``Stopping``). ``tests/test_errors.py`` walks every exception class of the product and checks
it is in the tree or in that list.
"""

from __future__ import annotations


class OrchestratorError(Exception):
    """Base of every deliberate runtime error."""


class SetupError(OrchestratorError):
    """The pod cannot start as configured; the message says what to change."""


class PodRuntimeError(OrchestratorError):
    """A failure while the pod runs; the pod itself keeps going."""
