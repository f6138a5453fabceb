"""The web page's routes over real HTTP: the page and its files behind the token, with a CSP
of their own files and no inline script; the charts drawn from a pod's real stats; the host
sampled for its memory chart; and no script of the page writes markup from text."""

from __future__ import annotations

import asyncio
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import pytest

from orchestrator.core.memory_series import MemorySeries
from orchestrator.serving.http.web import STATIC_FILES
from tests.orchestrator.serving.http.api import Api, Stream, add_pod, workspace

NS = "{http://www.w3.org/2000/svg}"
STATIC = resources.files("orchestrator.serving.http.web").joinpath("static")


class Tags(HTMLParser):
    """Every start tag of a page and its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


async def test_the_page_is_behind_the_token_and_its_own_files_only(api: Api) -> None:
    anonymous = api.client(token=None)
    assert (await anonymous.get("/")).status_code == 401
    # The token URL sets the cookie and takes the token out of the address.
    landing = await anonymous.get("/", params={"token": api.token})
    assert landing.status_code == 303
    page = await anonymous.get("/")
    assert page.status_code == 200, page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp
    parsed = Tags()
    parsed.feed(page.text)
    metas = [attrs for tag, attrs in parsed.tags if tag == "meta"]
    assert any("width=device-width" in (m.get("content") or "") for m in metas)
    scripts = [attrs for tag, attrs in parsed.tags if tag == "script"]
    assert scripts and all((s.get("src") or "").startswith("/static/") for s in scripts)
    assert not [a for _, attrs in parsed.tags for a in attrs if a.startswith("on")]
    assert not [attrs for tag, attrs in parsed.tags if "style" in attrs]
    # Every file the page names is served, with its type, under the same policy.
    named = [a.get("src") or a.get("href") for t, a in parsed.tags if t in ("script", "link")]
    for path in named:
        assert path
        got = await anonymous.get(path)
        assert got.status_code == 200, path
        assert got.headers["content-security-policy"] == csp
        assert got.headers["x-content-type-options"] == "nosniff"
    for name, media in STATIC_FILES.items():
        got = await anonymous.get(f"/static/{name}")
        assert (got.status_code, got.headers["content-type"]) == (200, media)


@pytest.mark.parametrize(
    "path",
    ["/static/index.html/../__init__.py", "/static/..%2F__init__.py", "/static/nothing.js"],
)
async def test_nothing_else_is_served_as_a_static_file(api: Api, path: str) -> None:
    got = await api.client().get(path)
    assert got.status_code == 404
    assert "web_router" not in got.text


def test_no_script_of_the_page_writes_markup() -> None:
    sinks = re.compile(
        r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|"
        r"setAttribute\(\s*[\"']on"
    )
    for name in STATIC_FILES:
        if name.endswith(".js"):
            text = STATIC.joinpath(name).read_text()
            assert not sinks.search(text), name


async def test_the_charts_draw_the_pods_stats(api: Api, tmp_path: Path) -> None:
    http = api.client()
    await add_pod(http, workspace(tmp_path, "charted"), name="c")
    stream = Stream(api.client(), "/v1/pods/c/events")
    try:
        accepted = await http.post("/v1/pods/c/runs", json={"input": "hello"})
        assert accepted.status_code == 202
        await stream.until("run_end")
    finally:
        await stream.close()
    stats = (await http.post("/v1/pods/c/methods/get_stats", json={})).json()
    assert stats["event"] == "stats"
    [turn] = stats["data"]["turns"]

    usage = await http.get("/v1/pods/c/charts/usage.svg")
    assert usage.status_code == 200
    assert usage.headers["content-type"].startswith("image/svg+xml")
    root = ET.fromstring(usage.text)
    drawn = {
        rect.attrib["data-kind"]: int(rect.attrib["data-value"])
        for rect in root.iter(f"{NS}rect")
        if "data-kind" in rect.attrib
    }
    assert drawn == {
        "cache_read": turn["cache_read_input_tokens"],
        "cache_write": turn["cache_creation_input_tokens"],
        "input": turn["input_tokens"],
        "output": turn["output_tokens"],
    }

    states = ET.fromstring((await http.get("/v1/pods/c/charts/states.svg")).text)
    bars = {r.attrib["data-state"] for r in states.iter(f"{NS}rect") if "data-state" in r.attrib}
    assert {"idle", "requesting"} <= bars

    unknown = await http.get("/v1/pods/nobody/charts/usage.svg")
    assert unknown.status_code == 404
    assert "error" in unknown.json()


async def test_the_host_is_sampled_for_its_memory_chart(api: Api, tmp_path: Path) -> None:
    http = api.client()
    await add_pod(http, workspace(tmp_path, "one"), name="one")
    series = api.server.app.state.ctx.memory
    assert isinstance(series, MemorySeries)

    async def sampled() -> None:
        while not [s for s in series.samples() if s.loaded + s.unloaded >= 1]:
            await asyncio.sleep(0.05)

    series.interval_s = 0.05  # after the sample under way, quickly
    await asyncio.wait_for(sampled(), 60)
    svg = ET.fromstring((await http.get("/v1/host/charts/memory.svg")).text)
    loaded = [
        int(r.attrib["data-value"])
        for r in svg.iter(f"{NS}rect")
        if r.attrib.get("data-kind") == "loaded"
    ]
    assert loaded and max(loaded) == 1


def test_every_file_of_the_page_is_listed_and_packaged() -> None:
    on_disk = {p.name for p in STATIC.iterdir() if p.is_file()}
    assert on_disk == {*STATIC_FILES, "index.html"}
    pyproject = (Path(__file__).resolve().parents[4] / "pyproject.toml").read_text()
    patterns = re.search(r'"orchestrator\.serving\.http\.web" = \[(.*?)\]', pyproject)
    assert patterns is not None
    suffixes = {p.strip().strip('"').rsplit(".", 1)[-1] for p in patterns.group(1).split(",")}
    assert {name.rsplit(".", 1)[-1] for name in on_disk} <= suffixes


async def test_the_colours_and_the_state_table_come_from_their_python_sources(api: Api) -> None:
    from orchestrator.core.status_colours import STATUS_COLOURS
    from states.lifecycle import PUBLIC_STATUS

    http = api.client()
    css = (await http.get("/static/status.css")).text
    for status, colour in STATUS_COLOURS.items():
        assert re.search(
            rf"\.st-{status} \{{ --st: {colour.strong}; --st-muted: {colour.muted}; \}}", css
        )
    table = (await http.get("/static/states.js")).text
    found = re.fullmatch(r"export const STATUS_OF = Object\.freeze\((\{.*\})\);\n", table)
    assert found is not None
    assert json.loads(found.group(1)) == dict(PUBLIC_STATUS)
