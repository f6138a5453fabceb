"""web_fetch over the real socket (issue 41 §3): the scripted model fetches from a real local
site; a new domain asks and "always" allows it for the session; deny rules hold; the
loopback is refused unless a configured rule names the host, and so is a redirect into it;
read-only mode offers and runs it.

The pod offers web_fetch when ``[web] fetch`` resolves to ``local``: on the scripted provider
(which runs no server tools) the default ``auto`` does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.web_site import Site

LOCAL = "web_fetch(domain:127.0.0.1)"


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    served = await Site().start()
    try:
        yield served
    finally:
        await served.stop()


def fetch(url: str, call_id: str) -> ScriptedToolCall:
    return ScriptedToolCall(name="web_fetch", input={"url": url}, id=call_id)


async def results_of(c: Any) -> dict[str, dict[str, Any]]:
    history = (await c.request("get_history")).data["items"]
    return {i["call_id"]: i for i in history if i["kind"] == "tool_result"}


async def test_an_allowed_page_is_fetched_as_markdown_and_a_deny_rule_holds(
    workspace: Path, short_dir: Path, site: Site
) -> None:
    permissions = {
        "mode": "default",
        "allow": [LOCAL, "web_fetch(domain:localhost)", "web_fetch(domain:*)"],
        "deny": ["WebFetch(domain:127.0.0.2)"],
    }
    calls = [
        fetch(f"{site.base}/page", "toolu_page"),
        fetch(f"http://127.0.0.2:{site.port}/page", "toolu_denied"),
        # localhost is named exactly, so it may be the loopback, and so is 127.0.0.1; the
        # redirect from localhost to 127.0.0.3 is allowed by domain:*, which names no host:
        # the address guard refuses it. (Loopback, so that a broken guard would reach only
        # this machine.)
        fetch(
            f"http://localhost:{site.port}/redirect?to=http://127.0.0.3:{site.port}/page",
            "toolu_loop",
        ),
    ]
    replies = [ScriptedReply(tool_calls=calls), ScriptedReply(text="read it")]
    async with running_pod(workspace, short_dir, replies=replies, permissions=permissions) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read the page"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        assert not [e for e in events if e.event == "approval_request"]
        got = await results_of(c)
        page = got["toolu_page"]
        assert not page["is_error"] and "HTML as markdown" in page["summary"]
        assert "# Sorting lists" in page["content"] and "NAV-MENU" not in page["content"]
        denied = got["toolu_denied"]
        assert denied["is_error"]
        assert denied["summary"] == (
            "web_fetch: not run — denied by the rule WebFetch(domain:127.0.0.2)"
        )
        loop = got["toolu_loop"]
        assert loop["is_error"] and "127.0.0.3 is a loopback address" in loop["summary"]
        assert "web_fetch" in {t["name"] for t in pod.provider.requests[0].tools}
        pod.assert_all_requests_valid()
        await c.close()
    assert site.hits == ["/page", "/redirect"]


async def test_a_new_domain_asks_and_always_allows_it_for_the_session(
    workspace: Path, short_dir: Path, site: Site
) -> None:
    # No rule names localhost: the person is asked; "always" allows the domain, and the
    # address guard still refuses its loopback address (a person's answer is about a name,
    # not about where it resolves).
    url = f"http://localhost:{site.port}/page"
    replies = [
        ScriptedReply(tool_calls=[fetch(url, "toolu_1")]),
        ScriptedReply(
            tool_calls=[fetch(url + "?again", "toolu_2"), fetch(f"{site.base}/page", "toolu_3")]
        ),
        ScriptedReply(text="done"),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, permissions={"mode": "default"}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "fetch it"})
        request = await c.wait_for("approval_request")
        assert request.data["id"] == "toolu_1" and request.data["kind"] == "read"
        assert request.data["summary"] == f"fetch from localhost: {url}"
        assert "localhost" in request.data["reason"]
        await c.send("approve", {"id": "toolu_1", "scope": "session"})
        # The same domain does not ask again; another one (127.0.0.1) does.
        other = await c.wait_for("approval_request")
        assert other.data["id"] == "toolu_3"
        assert other.data["summary"].startswith("fetch from 127.0.0.1:")
        await c.send("deny", {"id": "toolu_3", "message": "not that one"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        got = await results_of(c)
        for call_id in ("toolu_1", "toolu_2"):
            assert got[call_id]["is_error"]
            assert "localhost resolves to" in got[call_id]["summary"]
            assert "loopback" in got[call_id]["summary"]
        assert got["toolu_3"]["summary"] == "denied by user: not that one"
        pod.assert_all_requests_valid()
        await c.close()
    assert site.hits == []  # nothing reached the loopback


async def test_read_only_mode_offers_and_runs_web_fetch(
    workspace: Path, short_dir: Path, site: Site
) -> None:
    replies = [
        ScriptedReply(tool_calls=[fetch(f"{site.base}/doc.pdf", "toolu_pdf")]),
        ScriptedReply(text="read"),
    ]
    permissions = {"mode": "read-only", "allow": [LOCAL]}
    async with running_pod(workspace, short_dir, replies=replies, permissions=permissions) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read the PDF"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        got = await results_of(c)
        assert (
            not got["toolu_pdf"]["is_error"] and "a PDF of 2 pages" in got["toolu_pdf"]["summary"]
        )
        # The model was sent the PDF as a document block inside the tool result.
        last = pod.provider.requests[-1].messages[-1]
        result = next(b for b in last["content"] if b["type"] == "tool_result")
        assert [b["type"] for b in result["content"]][-1] == "document"
        pod.assert_all_requests_valid()
        await c.close()


async def test_fetch_off_neither_offers_nor_runs_it(
    workspace: Path, short_dir: Path, site: Site
) -> None:
    """``[web] fetch = "off"``: the requests do not offer web_fetch, and a call of it (a model
    that calls it anyway) runs nothing."""
    replies = [
        ScriptedReply(tool_calls=[fetch(f"{site.base}/page", "toolu_off")]),
        ScriptedReply(text="done"),
    ]
    async with running_pod(
        workspace,
        short_dir,
        replies=replies,
        permissions={"mode": "default", "allow": [LOCAL]},
        web={"fetch": "off"},
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read the page"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        result = (await results_of(c))["toolu_off"]
        assert result["is_error"] is True
        assert "web_fetch" in result["summary"]
        assert site.hits == []
        offered = {spec["name"] for spec in pod.provider.requests[0].tools}
        assert "web_fetch" not in offered and "read_file" in offered


async def test_auto_offers_the_local_tool_on_a_platform_without_server_tools(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="hi")]) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hello"})
        await collect_until(c, "run_end")
        offered = [spec["name"] for spec in pod.provider.requests[0].tools]
        assert "web_fetch" in offered
        web = (await c.request("get_status")).data["web"]
        assert web["fetch"] == "local"
