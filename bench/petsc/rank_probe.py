#!/usr/bin/python3
"""Per-rank probe for the PETSc trajectory benchmarks: runs one MPI rank's program and records
what the kernel counted for that process.

    mpirun -n 2 bench/petsc/rank_probe.py OUT_DIR -- ./ex5adj -ts_max_steps 300 ...

writes OUT_DIR/rank<R>.json (R = the MPI rank from the launcher's environment) with

- peak_rss_kib: the process's resident high-water mark (getrusage of the waited-for child,
  ru_maxrss; the same figure as VmHWM in /proc/<pid>/status at exit),
- rchar, wchar: bytes the process passed through read()/write()-like system calls (every
  thread, the I/O thread included), read_bytes, write_bytes: bytes it caused to be fetched from
  or sent to the storage layer (/proc/<pid>/io, read after the process exited but before it is
  reaped, so nothing it did is missed),
- wall_seconds, exit_status.

The probe exits with the program's status. Python standard library only.
"""
import json
import os
import subprocess
import sys
import time


def rank_from_env():
    for name in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MPI_LOCALRANKID"):
        if name in os.environ:
            return int(os.environ[name])
    return 0


def read_io(pid):
    """The /proc/<pid>/io counters of an exited, not yet reaped process (empty if unreadable)."""
    try:
        with open(f"/proc/{pid}/io") as f:
            return {k: int(v) for k, v in (line.split(":") for line in f if ":" in line)}
    except OSError:
        return {}


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: rank_probe.py OUT_DIR -- PROGRAM [ARGS...]")
    out_dir, cmd = sys.argv[1], sys.argv[3:]
    os.makedirs(out_dir, exist_ok=True)
    start = time.monotonic()
    child = subprocess.Popen(cmd)
    # Wait for the exit without reaping, so /proc/<pid>/io still holds the final counters.
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    io = read_io(child.pid)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    child.returncode = os.waitstatus_to_exitcode(status)  # already reaped: keep Popen quiet
    record = {
        "rank": rank_from_env(),
        "peak_rss_kib": usage.ru_maxrss,
        "rchar": io.get("rchar"),
        "wchar": io.get("wchar"),
        "read_bytes": io.get("read_bytes"),
        "write_bytes": io.get("write_bytes"),
        "wall_seconds": wall,
        "user_seconds": usage.ru_utime,
        "system_seconds": usage.ru_stime,
        "minor_faults": usage.ru_minflt,
        "exit_status": child.returncode,
    }
    with open(os.path.join(out_dir, f"rank{record['rank']}.json"), "w") as f:
        json.dump(record, f)
    sys.exit(child.returncode if child.returncode >= 0 else 128 - child.returncode)


if __name__ == "__main__":
    main()
