"""A stand-in for a pod: starts one command under a supervisor, prints the supervisor's pid,
and waits to be killed. ``python stand_in_pod.py GRACE CGROUP(0|1) COMMAND...``"""

from __future__ import annotations

import subprocess
import sys
import time

from orchestrator.adapters.procs import Supervision


def main() -> None:
    grace, cgroup, *command = sys.argv[1:]
    supervision = Supervision(grace_s=float(grace), cgroup=cgroup == "1", linger=True)
    child = subprocess.Popen(supervision.argv(command), start_new_session=True)
    print(child.pid, flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    main()
