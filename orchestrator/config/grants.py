"""Grants: the settings a workspace's own config file may not give, and keeping them out of it.

A workspace's ``.pod/config.toml`` travels with the repository being worked on (a clone can
carry one nobody read), so it is untrusted. The rule: **a workspace file may narrow and tune,
never choose programs, paths outside the workspace, identities, or where the model's words
come from.** Every key of :class:`~orchestrator.config.model.PodConfig` is classified here, once
(a test fails when a new key is in neither table):

* :data:`GRANTS`: keys the workspace's file may not set (or, for some, may set only to a
  narrowing value or a path inside the workspace). Only the user's config or the command line
  gives them. :func:`strip_workspace_grants` takes them out of the parsed file and
  :func:`refused_grants_warning` tells the user where such a setting belongs instead.
* :data:`WORKSPACE_KEYS`: everything else, with why a repository may set it.

What the grants guard against, key by key:

* programs: ``mcp`` (an MCP server is a command, or a URL the pod connects to with headers;
  a workspace may only put a server the user configured in the sandbox, ``sandbox = true``),
  ``hooks`` (commands run at every tool call, outside the model's permissions),
  ``tool_env`` / ``tool_env_allow`` (``LD_PRELOAD``, ``PATH``, a secret into every command);
* reach: ``allow_bash``, ``permissions.allow`` and the widening ``permissions.mode`` values,
  ``read_roots`` / ``write_roots`` / ``memory.workspace_root`` outside the workspace;
* paths the pod writes or replaces: ``socket`` (``package.sock`` would have put the info
  file over the project's ``package.json``), ``session`` (anywhere: a session file shipped in
  the repository is a forged conversation, its paused turn's calls run on resume);
* identities: ``name`` (the pod's name in ``pod ls`` and ``pod attach``, and its socket's
  file name), ``parent_socket`` (which pod this one reports to, in that pod's conversation);
* where the model's words come from: ``provider`` and ``scripted_script`` (the repository
  as the model, its tool calls run under the user's grants);
* a cloud's endpoint and credentials: ``[bedrock]`` (``region``, ``profile``) and
  ``[vertex]`` (``project_id``, ``region``): which account's credentials sign the requests,
  which project is billed, and where the conversation is sent;
* money: ``prices`` (a repository setting every price to 0 would make every budget
  endless), and ``budget_usd`` / ``turn_budget_usd`` above your own (only a lower one);
* the web: ``web.search`` and ``web.fetch`` (only ``"off"``), ``web.max_uses`` (only lower
  than yours), ``web.allowed_domains`` (a repository choosing which sites the model reads is
  steering, not narrowing), and ``web.blocked_domains`` where your config allows a list (the
  API takes one list per tool: adding a blocked list would drop your allowed one);
* where the pod's work is reported: ``telemetry.*`` (a collector of the repository's would
  receive every span, with ``log_content`` the prompts and tool output);
* the library: ``skills.enabled`` and ``skills.claude_dirs`` (only ``false``: a repository
  turning on a folder of skills is a repository choosing what the model is told), and
  ``skills.prompt_max_chars`` (only lower than yours).

Pure functions over the parsed TOML.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, TypeGuard

from orchestrator.config.permissions import WIDENING_MODES
from orchestrator.config.skills import narrowed_skills
from orchestrator.config.web import DEFAULT_MAX_USES
from orchestrator.core.hook_events import HookEvent

_PRICE_KEYS = (
    "input",
    "output",
    "cache_write",
    "cache_write_1h",
    "cache_read",
    "long_context_input",
    "long_context_output",
    "web_search_per_1k",
    "web_fetch_per_1k",
)

GRANTS: dict[str, str | None] = {
    "name": "--name NAME",
    "provider": "--provider",
    "scripted_script": "--script FILE",
    "allow_bash": "--allow-bash",
    "permissions.mode": "--permission-mode",
    "permissions.allow": "--permission-mode yolo, or [permissions] allow in your own config",
    "read_roots": "--read-root PATH",
    "write_roots": "--write-root PATH",
    "memory.workspace_root": None,
    "mcp.servers.<name>.command": None,
    "mcp.servers.<name>.args": None,
    "mcp.servers.<name>.env": None,
    "mcp.servers.<name>.cwd": None,
    "mcp.servers.<name>.url": None,
    "mcp.servers.<name>.headers": None,
    "mcp.servers.<name>.enabled": None,
    "mcp.servers.<name>.allow": None,
    "mcp.servers.<name>.deny": None,
    "mcp.servers.<name>.permission": None,
    "mcp.servers.<name>.timeout_s": None,
    "mcp.servers.<name>.call_timeout_s": None,
    "mcp.servers.<name>.cancel_grace_s": None,
    "mcp.servers.<name>.sandbox": None,
    "mcp.servers.<name>.sampling": None,
    "mcp.servers.<name>.oauth_client_id": None,
    "mcp.servers.<name>.oauth_client_secret": None,
    "mcp.servers.<name>.oauth_grant": None,
    "mcp.servers.<name>.oauth_issuer": None,
    "mcp.servers.<name>.oauth_client_metadata_url": None,
    "mcp.elicitation": None,
    "session": "--session PATH",
    "socket": "--socket PATH",
    "parent_socket": "--parent-socket PATH",
    "tool_env_allow": None,
    "tool_env": None,
    **{f"hooks.{event}": None for event in HookEvent},
    "host.enabled": None,
    "host.http": None,
    "host.idle_exit_s": None,
    "host.idle_unload_s": None,
    "host.max_loaded": None,
    "sandbox.mode": None,
    "sandbox.network": None,
    "sandbox.writable": None,
    "sandbox.readable": None,
    "permissions.sandboxed_bash": None,
    "subpods.max_children": None,
    "subpods.max_depth": None,
    "subpods.depth": None,
    "subpods.role": None,
    "subpods.parent": None,
    "subpods.child_script": None,
    "web.search": "--web on|off",
    "web.fetch": "--web off",
    "web.max_uses": None,
    "web.allowed_domains": None,
    "telemetry.otlp_endpoint": None,
    "telemetry.log_content": None,
    "skills.enabled": None,
    "skills.claude_dirs": None,
    "skills.prompt_max_chars": None,
    "bedrock.region": None,
    "bedrock.profile": None,
    "vertex.project_id": None,
    "vertex.region": None,
    **{f"prices.<name>.{key}": None for key in _PRICE_KEYS},
}
"""Keys a workspace's config cannot set (see the module), and the option that grants each."""

_TUNING = "tunes the model's work: more or fewer tokens, never more reach"

WORKSPACE_KEYS: dict[str, str] = {
    "model": "which model answers, through the user's own key and endpoint (cost, not reach)",
    "max_tokens": _TUNING,
    "max_rounds": _TUNING,
    "thinking": "how much the model reasons, through the user's own key (cost, not reach); a "
    "setting the model refuses is an error before any request",
    "effort": "how much effort the model puts in (cost and speed, not reach)",
    "thinking_display": "whether thinking text is streamed or omitted (speed, not reach)",
    "provider_max_retries": "how often a failed request is retried (bounded: at most 10)",
    "fallback_model": "which model answers when the pod's is overloaded, through the user's "
    "own key and endpoint (cost, not reach)",
    "fallback_on": "which failures switch to the fallback model (cost, not reach)",
    "provider_timeout_s": "how long one request may take",
    "bash_timeout_s": "how long a command the user allowed may run",
    "permissions.ask": "adds rules that ask first: narrows what runs without asking",
    "permissions.deny": "adds rules that deny: narrows what runs at all",
    "tool_output_max_bytes": _TUNING,
    "tool_output_overrides": _TUNING,
    "prune_keep_turns": _TUNING,
    "prune_step_tokens": _TUNING,
    "context_window": "when the pod compacts; the API refuses what does not fit either way",
    "compact_at": _TUNING,
    "compact_keep_tokens": _TUNING,
    "compact_keep_rounds": _TUNING,
    "compact_max_files": "files read again at compaction, through the same scope as any read",
    "prompt_cache": "how long cache entries live (cost, not reach)",
    "web.blocked_domains": "adds domains the web tools never reach (narrows); ignored when your "
    "config allows a list, which the API cannot take with a blocked one",
    "file_ref_style": "how `@file` bodies the user attached reach the model",
    "file_ref_max_bytes": _TUNING,
    "file_ref_max_count": _TUNING,
    "max_preread_files": _TUNING,
    "memory.enabled": "whether the workspace's own knowledge records are read (narrows)",
    "inject_resident_knowledge": "whether resident records are listed in the system prompt",
    "checkpoints": "whether the pod keeps checkpoints of the workspace for rewind (off narrows)",
    "checkpoint_max_file_bytes": "which files are checkpointed, bounded (at most 256 MiB a file)",
    "checkpoint_max_total_bytes": "when checkpoints fall back to touched files, bounded (64 GiB)",
    "max_turn_tokens": _TUNING,
    "budget_usd": "only lower than your own budget: the pod pauses sooner, never later",
    "turn_budget_usd": "only lower than your own budget: the pod pauses sooner, never later",
    "subpods.enabled": "whether the model may delegate to child pods, each with this pod's "
    "permissions or fewer (off narrows)",
    "subpods.child_max_tokens": _TUNING,
    "subpods.start_timeout_s": "how long a child pod may take to start",
    "agents.<name>.description": "when the model should use an agent (words, not reach)",
    "agents.<name>.system_prompt": "what a child is told, as AGENTS.md tells the pod",
    "agents.<name>.tools": "narrows a child's tools to a subset of its parent's",
    "agents.<name>.model": "which model answers a child, through the user's own key (cost)",
    "agents.<name>.permission_mode": "a child's mode, never wider than its parent's",
    "jobs.max_jobs": "how many background commands the user allowed may run at once, bounded "
    "(at most 64); each still needs bash's permission",
    "jobs.max_spool_bytes": "how much of a background job's output is kept on disk, bounded "
    "(at most 1 GiB a job)",
}
"""Keys a workspace's config may set, and why that gives it nothing it should not have."""


def _inside(path: str, workspace: Path) -> Path | None:
    """``path`` (relative to the workspace) made absolute, or None when it leads outside."""
    resolved = (workspace / path).resolve()
    return resolved if resolved == workspace or workspace in resolved.parents else None


def _contained(value: Any, workspace: Path) -> tuple[bool, Any]:
    """(may the workspace set it, the value to use) for one path-valued grant.

    Values of the wrong type are passed on untouched so validation names them.
    """
    if isinstance(value, str):
        inside = _inside(value, workspace)
        return inside is not None, str(inside) if inside is not None else value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        paths = [_inside(v, workspace) for v in value]
        if any(p is None for p in paths):
            return False, value
        return True, [str(p) for p in paths]
    return True, value


def strip_workspace_grants(
    data: Mapping[str, Any],
    workspace: Path,
    *,
    servers: Collection[str] = (),
    web: Mapping[str, Any] | None = None,
    skills: Mapping[str, Any] | None = None,
    budgets: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """A workspace file's settings without the grants it may not give, and those grants' keys.

    ``workspace`` must be resolved. Kept paths come back absolute. ``servers``: the MCP
    servers the user configured, which the file may put in the sandbox. ``web``: the
    ``[web]`` table of the user's config and the command line, which the file may narrow;
    ``skills``: the same for ``[skills]``.
    ``budgets``: the user's config and command line, whose budgets the file may only lower.
    """
    kept = dict(data)
    refused: list[str] = []
    for key in ("name", "provider", "scripted_script", "session", "socket", "parent_socket"):
        # Identities, where the model's words come from, files the pod writes or adopts:
        # the user's call wherever they point (a session inside the workspace is a forgery
        # the repository ships).
        if key in kept:
            del kept[key]
            refused.append(key)
    if "allow_bash" in kept and kept["allow_bash"] is not False:
        del kept["allow_bash"]
        refused.append("allow_bash")
    for key in ("read_roots", "write_roots"):
        if key in kept:
            allowed, kept[key] = _contained(kept[key], workspace)
            if not allowed:
                del kept[key]
                refused.append(key)
    for key in ("tool_env_allow", "tool_env"):
        # What reaches tool processes (a secret by name, a PATH or LD_PRELOAD) is the
        # user's call, never a cloned repository's.
        if kept.get(key):
            del kept[key]
            refused.append(key)
    permissions = kept.get("permissions")
    if isinstance(permissions, Mapping):
        # A repository may narrow what runs without asking (deny, ask, read-only), never widen.
        permissions = dict(permissions)
        if permissions.get("mode") in WIDENING_MODES:
            del permissions["mode"]
            refused.append("permissions.mode")
        if permissions.get("allow"):
            del permissions["allow"]
            refused.append("permissions.allow")
        if permissions.get("sandboxed_bash") not in (None, "ask"):
            del permissions["sandboxed_bash"]
            refused.append("permissions.sandboxed_bash")
        kept["permissions"] = permissions
    if "mcp" in kept:
        kept["mcp"], mcp_refused = _sandbox_requests(kept["mcp"], servers)
        refused += mcp_refused
    for key in ("host", "hooks", "telemetry", "bedrock", "vertex"):
        # A hook is a command the pod runs at every tool call, which process serves the
        # user's pods is the user's, and so is where the pod's traces (with log_content, the
        # prompts) are sent: never a repository's call. A cloud's region, profile and project
        # pick the endpoint and the credentials the requests are signed with.
        if kept.pop(key, None):
            refused.append(key)
    sandbox = kept.get("sandbox")
    if isinstance(sandbox, Mapping):
        # A repository may ask for the sandbox (mode "on"), never turn it off or open it.
        sandbox = dict(sandbox)
        if "mode" in sandbox and sandbox["mode"] != "on":
            del sandbox["mode"]
            refused.append("sandbox.mode")
        if sandbox.get("network") not in (None, False, []):
            del sandbox["network"]
            refused.append("sandbox.network")
        for key in ("writable", "readable"):
            if sandbox.get(key):
                del sandbox[key]
                refused.append(f"sandbox.{key}")
        kept["sandbox"] = sandbox
    subpods = kept.get("subpods")
    if isinstance(subpods, Mapping):
        # How many processes a delegation may multiply into, and what a parent tells its
        # child about itself, are the user's (and the parent's) call.
        subpods = dict(subpods)
        for key in ("max_children", "max_depth", "depth", "role", "parent", "child_script"):
            if key in subpods:
                del subpods[key]
                refused.append(f"subpods.{key}")
        kept["subpods"] = subpods
    memory = kept.get("memory")
    if isinstance(memory, Mapping) and "workspace_root" in memory:
        memory = dict(memory)
        allowed, memory["workspace_root"] = _contained(memory["workspace_root"], workspace)
        if not allowed:
            del memory["workspace_root"]
            refused.append("memory.workspace_root")
        kept["memory"] = memory
    if "web" in kept:
        kept["web"], web_refused = _narrowed_web(kept["web"], web or {})
        refused += web_refused
    if "skills" in kept:
        kept["skills"], skills_refused = narrowed_skills(kept["skills"], skills or {})
        refused += skills_refused
    if kept.pop("prices", None) is not None:
        # Prices decide when a budget pauses the pod: the user's word, never a repository's.
        refused.append("prices")
    for key in ("budget_usd", "turn_budget_usd"):
        asked, mine = kept.get(key), (budgets or {}).get(key)
        if _is_amount(asked) and _is_amount(mine) and float(asked) > float(mine):
            del kept[key]
            refused.append(key)
    return kept, refused


def _is_amount(value: object) -> TypeGuard[float]:
    """A number a budget can be compared as (a wrong type is left for validation to name)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _narrowed_web(table: Any, user: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """The ``[web]`` a workspace's file may give over the user's ``user``: turning search or
    fetch off, a lower ``max_uses``, more blocked domains; and the keys it tried beyond that.
    (Values of the wrong type are passed on untouched, so validation names them.)"""
    if not isinstance(table, Mapping):
        return table, []
    web = dict(table)
    refused: list[str] = []
    for key in ("search", "fetch"):
        # "auto", "on", "server", "local" all widen something over an "off" the user chose
        # (or, for fetch, move where pages are fetched from): only "off" narrows.
        if key in web and web[key] != "off":
            del web[key]
            refused.append(f"web.{key}")
    uses, limit = web.get("max_uses"), user.get("max_uses", DEFAULT_MAX_USES)
    if isinstance(uses, int) and isinstance(limit, int) and uses > limit:
        del web["max_uses"]
        refused.append("web.max_uses")
    if web.get("allowed_domains"):
        del web["allowed_domains"]
        refused.append("web.allowed_domains")
    else:
        web.pop("allowed_domains", None)  # an empty list would only hide the user's own list
    if web.get("blocked_domains") and user.get("allowed_domains"):
        del web["blocked_domains"]
        refused.append("web.blocked_domains")
    return web, refused


def _sandbox_requests(mcp: Any, servers: Collection[str]) -> tuple[dict[str, Any], list[str]]:
    """The ``[mcp]`` a workspace's file may give, ``sandbox = true`` for servers the user
    configured, and the keys it tried to set beyond that. (A request for a server the user
    did not configure is left out without a word: it may be meant for someone else's.)"""
    if not isinstance(mcp, Mapping):
        return {}, ["mcp.servers"]
    # ``elicitation`` would answer a server's questions in the user's name.
    refused = {f"mcp.{key}" for key in mcp if key != "servers"}
    table = mcp.get("servers", {})
    if not isinstance(table, Mapping):
        return {}, sorted(refused | {"mcp.servers"})
    kept: dict[str, Any] = {}
    for name, entry in table.items():
        # An MCP server is a program the pod runs: a cloned repository does not get to add
        # one or change one, only ask that one runs sandboxed.
        if not isinstance(entry, Mapping) or any(key != "sandbox" for key in entry):
            refused.add("mcp.servers")
        if isinstance(entry, Mapping) and "sandbox" in entry:
            if entry["sandbox"] is not True:
                refused.add(f"mcp.servers.{name}.sandbox")
            elif name in servers:
                kept[name] = {"sandbox": True}
    return ({"servers": kept} if kept else {}), sorted(refused)


def refused_grants_warning(path: Path, keys: list[str], user_file: Path) -> str:
    """The start-up alert for grants a workspace's config tried to give."""
    flags = [flag for key in keys if (flag := GRANTS.get(key))]
    how = (
        f"pass {', '.join(flags)} on the command line or set them in {user_file}"
        if flags
        else f"set them in {user_file}"
    )
    return (
        f"{path} sets {', '.join(keys)}, which only you can choose (they widen what the model "
        "can reach, or choose programs, files, identities or the model): a workspace's "
        f"config cannot, so they are ignored. To choose them yourself, {how}."
    )
