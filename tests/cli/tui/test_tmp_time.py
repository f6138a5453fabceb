import time

from tests.cli.tui.conftest import Session, pod_status


async def test_t(session: Session) -> None:
    t = time.monotonic()
    await session.to_state("running")
    print("to_state", time.monotonic() - t)
    t = time.monotonic()
    await session.pilot.press("ctrl+r")
    print("press", time.monotonic() - t)
    t = time.monotonic()
    await session.pilot.pause(0.05)
    print("pause", time.monotonic() - t)
    t = time.monotonic()
    print(await pod_status(session.probe), time.monotonic() - t)
    print(len(session.app.model.entries[-1].text))
