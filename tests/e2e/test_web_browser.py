"""The web page in a real browser (headless Chromium driven by Selenium): a real ``pod host
--http`` with two pods on the fake Messages API; the page opened with the token URL lists both, opens one, sends a
prompt and watches the reply stream, pauses it mid-stream and sees ``paused``, resumes it,
approves a command from the page, rewinds to before it, and keeps a screenshot (docs/http.md, "The web page").

A reply that holds ``<script>`` and ``<img onerror>`` is shown as text: no element is made
of it and no handler runs. At a phone's width (390 px) the page does not scroll sideways.

Every wait is for what the page shows, with a generous ceiling; nothing sleeps for a verdict.
Without Chromium, its driver or Selenium the test is skipped with what to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from orchestrator.serving.http.address import read_http_info

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
"""Where the screenshots are copied for CI to keep (``tests/artifacts/``, git-ignored)."""
WAIT_S = 90.0
MODEL = "claude-sonnet-4-6"
HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
STORY = (
    f"Once upon a time {HOSTILE} there was a pod that told its story slowly, one small piece "
    "at a time, so that a person watching it in a browser could stop it halfway through "
    "and pick it up again later. " * 3
)
COMMAND = "echo hello from the page"
INSTALL = (
    "needs a browser: apt-get install chromium chromium-driver, and "
    "pip install -e '.[browser]' (selenium)"
)


def _browser() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip(INSTALL)
    if chromium is None or driver is None:
        pytest.skip(INSTALL)
    return chromium, driver


def _replies() -> list[Reply]:
    return [
        # Slow enough to pause halfway: ~50 chunks, a tenth of a second each.
        Reply(text=STORY, chunk_size=12, delay_s=0.1),
        # What the resumed turn streams.
        Reply(text="And after the pause, the story ends here.", chunk_size=10),
        # A command the default mode asks a person about.
        Reply(
            text="I will run it.", tool_calls=[ToolCall(name="bash", input={"command": COMMAND})]
        ),
        Reply(text="It printed: hello from the page."),
    ]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """``pod host --http 127.0.0.1:0`` whose pods talk to the fake Messages API (real HTTP
    and SSE, a prompt cache that reports its reads and writes, a priced model)."""
    fake = FakeAnthropic(_replies()).start()
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.write_text(f'model = "{MODEL}"\n\n' + config.read_text())
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url}
    env.pop("POD_NO_HOST", None)
    log = tmp_path / "host.log"
    info_path = Path(env["XDG_RUNTIME_DIR"]) / "pod" / "_http.json"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "host", "--http", "127.0.0.1:0"],
            env=env, stdout=out, stderr=out, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT_S
        info = read_http_info(info_path)
        while info is None:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
            info = read_http_info(info_path)
        yield {**info, "log": log}
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        fake.stop()


def _add_pod(info: dict[str, Any], folder: Path, name: str) -> None:
    folder.mkdir()
    (folder / "README.md").write_text(f"# {name}\n")
    response = httpx.post(
        f"{info['url']}/v1/pods",
        json={"workspace": str(folder), "name": name},
        headers={"Authorization": f"Bearer {info['token']}"},
        timeout=60,
    )
    assert response.status_code == 201, response.text


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    chromium, driver_path = _browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'chromium'}",
        "--window-size=1280,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver: Any, what: str, condition: Any) -> Any:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, WAIT_S, poll_frequency=0.05).until(condition)
    except TimeoutException:
        # What the page showed instead, for the failure's message (and its picture).
        ARTIFACTS.mkdir(exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / "web-failure.png"))
        shown = driver.execute_script("return document.body.innerText")
        raise AssertionError(
            f"waited {WAIT_S:.0f} s for {what}; the page shows:\n{shown}"
        ) from None


def _text(driver: Any, css: str) -> str:
    """The text of every element ``css`` selects, read in one step (the page redraws its
    lists while it runs: elements found in one call may be gone by the next)."""
    return str(
        driver.execute_script(
            "return Array.from(document.querySelectorAll(arguments[0]))"
            ".map(e => e.textContent).join('')",
            css,
        )
    )


def _count(driver: Any, css: str) -> int:
    return int(driver.execute_script("return document.querySelectorAll(arguments[0]).length", css))


def _click(driver: Any, css: str) -> None:
    """Click what ``css`` selects, found again if a redraw replaced it meanwhile."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    def clicked(d: Any) -> bool:
        try:
            d.find_element(By.CSS_SELECTOR, css).click()
        except StaleElementReferenceException:
            return False
        return True

    _wait(driver, f"a click on {css}", clicked)


def _status(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, "pod-state").get_attribute("data-status") or ""


def _save(driver: Any, tmp_path: Path, name: str) -> Path:
    shot = tmp_path / name
    driver.save_screenshot(str(shot))
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / name)
    return shot


def test_the_page_drives_a_pod_in_a_real_browser(
    browser: Any, host: dict[str, Any], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    _add_pod(host, tmp_path / "alpha", "alpha")
    # A workspace whose folder name is markup: the list shows it as text.
    _add_pod(host, tmp_path / '<img src=x onerror="window.pwned = 3">', "beta")
    driver = browser
    driver.get(f"{host['url']}/?token={host['token']}")
    # The token left the address bar for the cookie.
    assert "token=" not in driver.current_url
    _wait(
        driver,
        "two pods listed",
        lambda d: _count(d, "tr.pod-row") == 2,
    )
    names = driver.execute_script(
        "return Array.from(document.querySelectorAll('tr.pod-row')).map(r => r.dataset.name)"
    )
    assert names == ["alpha", "beta"]
    assert 'onerror="window.pwned = 3"' in _text(driver, 'tr.pod-row[data-name="beta"] .workspace')
    assert _count(driver, "#pod-rows img") == 0
    # The filter box narrows the list.
    driver.find_element(By.ID, "filter").send_keys("bet")
    _wait(
        driver,
        "the filter leaves beta",
        lambda d: _count(d, "tr.pod-row") == 1,
    )
    driver.find_element(By.ID, "filter").clear()
    driver.execute_script("document.getElementById('filter').dispatchEvent(new Event('input'))")
    _wait(driver, "both again", lambda d: _count(d, "tr.pod-row") == 2)

    _click(driver, 'tr.pod-row[data-name="alpha"] a')
    _wait(driver, "alpha opened, idle", lambda d: _status(d) == "idle")
    assert driver.find_element(By.ID, "pod-name").text == "alpha"

    # A prompt, its reply streaming in, paused halfway.
    driver.find_element(By.ID, "prompt-text").send_keys("tell me a story")
    _click(driver, "#send")
    _wait(driver, "the prompt shown", lambda d: "tell me a story" in _text(d, ".msg.user"))
    _wait(driver, "the reply streaming", lambda d: len(_text(d, ".msg.assistant.streaming")) > 80)
    _click(driver, "#pause")
    _wait(driver, "paused", lambda d: _status(d) == "paused")
    streamed = _text(driver, ".msg.assistant")
    assert "Once upon a time" in streamed and len(streamed) < len(STORY)
    # The model's markup is text: nothing was made of it, nothing ran.
    assert "<script>window.pwned = 1</script>" in streamed
    assert _count(driver, "#conversation script, #conversation img") == 0
    assert driver.execute_script("return window.pwned === undefined")

    _click(driver, "#resume")
    _wait(
        driver, "the resumed reply", lambda d: "the story ends here" in _text(d, ".msg.assistant")
    )
    _wait(driver, "idle again", lambda d: _status(d) == "idle")

    # A command, approved from the page; its output in its tool card.
    driver.find_element(By.ID, "prompt-text").send_keys("run the command")
    _click(driver, "#send")
    _wait(
        driver,
        "the approval form",
        lambda d: _count(d, ".waiting.approval button.approve") == 1,
    )
    assert COMMAND in _text(driver, ".waiting.approval")
    _click(driver, ".waiting.approval button.approve")
    _wait(
        driver,
        "the command's output",
        lambda d: "hello from the page" in _text(d, ".msg.tool.done .output"),
    )
    _wait(driver, "the last reply", lambda d: "It printed" in _text(d, ".msg.assistant"))
    _wait(driver, "idle at the end", lambda d: _status(d) == "idle")
    assert _count(driver, ".waiting.approval") == 0

    # The charts, drawn from the pod's stats after the turns.
    _wait(
        driver,
        "the charts loaded",
        lambda d: d.execute_script(
            "return ['usage-chart', 'states-chart'].every(id => {"
            " const img = document.getElementById(id);"
            " return img.complete && img.naturalWidth > 0 && img.src.includes('?t='); })"
        ),
    )
    assert driver.execute_script("return window.pwned === undefined")
    shot = _save(driver, tmp_path, "web-pod.png")
    assert shot.stat().st_size > 10_000

    # A rewind point: back to before the second prompt (the page asks first).
    _wait(
        driver,
        "rewind points at rest",
        lambda d: d.execute_script(
            "const b = document.querySelectorAll('#conversation .msg.user .rewind');"
            "return b.length === 2 && !b[1].hidden"
        ),
    )
    driver.execute_script("document.querySelectorAll('#conversation .msg.user .rewind')[1].click()")
    from selenium.webdriver.support import expected_conditions

    _wait(driver, "the confirmation", expected_conditions.alert_is_present()).accept()
    _wait(driver, "the second prompt gone", lambda d: _count(d, "#conversation .msg.user") == 1)
    assert "run the command" not in _text(driver, "#conversation")
    assert "the story ends here" in _text(driver, ".msg.assistant")

    # The list, at a phone's width: no sideways scrolling, the pods still there.
    driver.set_window_size(390, 844)
    driver.get(f"{host['url']}/#/")
    _wait(
        driver,
        "the list at 390 px",
        lambda d: _count(d, "tr.pod-row") == 2,
    )
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0
    _save(driver, tmp_path, "web-list-phone.png")
    # And one pod there, its conversation and charts under each other.
    driver.get(f"{host['url']}/#/pod/alpha")
    _wait(driver, "alpha at 390 px", lambda d: "story ends here" in _text(d, ".msg.assistant"))
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0
    _save(driver, tmp_path, "web-pod-phone.png")
