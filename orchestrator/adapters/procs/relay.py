"""The supervisor's ``--json-stdout``: the command's stdout through a filter that passes on
the lines that can be JSON-RPC and counts the rest (imported by the supervisor by its path:
standard library only)."""

from __future__ import annotations

import contextlib
import os

__all__ = ["NOISE_PASSED", "NOISE_SAID_EVERY", "LineFilter", "StdoutRelay"]

NOISE_PASSED = 5
"""With ``--json-stdout``: stray stdout lines passed on before the rest are only counted."""
NOISE_SAID_EVERY = 100_000
"""With ``--json-stdout``: a count of dropped lines goes to stderr this often, and at the end."""


class LineFilter:
    """Passes on the lines that may be JSON-RPC, streaming (a message of megabytes is never
    held whole), and counts the others; the first ``passed_noise`` of those pass too."""

    def __init__(self, passed_noise: int = NOISE_PASSED) -> None:
        self.passed_noise = passed_noise
        self.noise = 0
        """Non-JSON lines seen (passed on or dropped)."""
        self._state = "start"  # "start" (leading blanks so far), "pass" or "drop"
        self._lead = b""

    def feed(self, chunk: bytes) -> bytes:
        """What of ``chunk`` goes on."""
        out: list[bytes] = []
        at = 0
        while at < len(chunk):
            end = chunk.find(b"\n", at)
            stop = len(chunk) if end < 0 else end + 1
            if self._state == "start":
                part = chunk[at:stop]
                body = part.lstrip(b" \t\r")
                if not body or body == b"\n":
                    # Blank so far: a line of blanks is dropped uncounted, else wait.
                    self._lead = b"" if end >= 0 else self._lead + part[:4096]
                    at = stop
                    continue
                if body[:1] in (b"{", b"["):
                    self._state = "pass"
                else:
                    self.noise += 1
                    self._state = "pass" if self.noise <= self.passed_noise else "drop"
                if self._state == "pass":
                    out.append(self._lead)
                self._lead = b""
            if self._state == "pass":
                out.append(chunk[at:stop])
            if end >= 0:
                self._state = "start"
            at = stop
        return b"".join(out)


class StdoutRelay:
    """The command's stdout through a :class:`LineFilter` to ours, in a thread."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        # Our copies of where the lines and the counts go; _detach_stdio drops fds 1 and 2.
        self.out = os.dup(1)
        self.err = os.dup(2)
        self.filter = LineFilter()
        self._said = 0
        import threading  # only supervisors that filter pay for it

        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        """Begin relaying (after the command was forked with ``write_end`` as its stdout)."""
        os.close(self.write_end)
        self._thread.start()

    def _run(self) -> None:
        try:
            while chunk := os.read(self.read_end, 1 << 16):
                passed = self.filter.feed(chunk)
                view = memoryview(passed)
                while view:
                    view = view[os.write(self.out, view) :]
                if self.filter.noise - self._said >= NOISE_SAID_EVERY:
                    self._say_noise()
        except OSError:
            pass  # the pod closed its end: nobody is reading any more
        finally:
            self._say_noise()
            with contextlib.suppress(OSError):
                os.close(self.out)

    def _say_noise(self) -> None:
        dropped = self.filter.noise - min(self.filter.noise, self.filter.passed_noise)
        if self.filter.noise == self._said or not dropped:
            return
        self._said = self.filter.noise
        with contextlib.suppress(OSError):
            os.write(
                self.err,
                f"supervisor: {self.filter.noise} lines on stdout were not JSON-RPC; "
                f"{dropped} dropped\n".encode(),
            )

    def join(self, timeout_s: float) -> None:
        """Let the last lines through before we exit."""
        self._thread.join(timeout_s)
