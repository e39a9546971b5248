"""CPU time of processes from /proc (Linux): what a benchmark's workers and their
PostgreSQL backends spent, whatever else runs on the machine."""

from __future__ import annotations

import os
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds incl. reaped children) of a process, from /proc."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = raw[raw.rindex(")") + 2 :].split()
    ticks = sum(int(x) for x in rest[11:15])  # utime, stime, cutime, cstime
    return int(rest[1]), ticks / CLK_TCK


def descendants(root: int) -> set[int]:
    """``root`` and every process below it."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat:
                parents[int(entry)] = stat[0]
    found = {root}
    changed = True
    while changed:
        changed = False
        for pid, ppid in parents.items():
            if ppid in found and pid not in found:
                found.add(pid)
                changed = True
    return found


def cpu_seconds(pids: set[int]) -> dict[int, float]:
    """CPU seconds (user + system, reaped children included) per live process."""
    out = {}
    for pid in pids:
        stat = _stat(pid)
        if stat:
            out[pid] = stat[1]
    return out
