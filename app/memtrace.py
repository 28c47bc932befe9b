"""A diagnostic hook, off by default: `FAMILIAR_TRACEMALLOC=<file>` makes headless mode trace Python
allocations and rewrite <file> every `FAMILIAR_TRACEMALLOC_SECONDS` (default 300) with what grew since
the first snapshot (taken one interval after start, once start-up allocations have settled), and
`FAMILIAR_TRACEMALLOC_FRAMES` (default 1) frames of each allocation's stack are kept.

Used by bench/bench_soak.py to find what grows over a long run. Tracing costs CPU and memory of its own
(reported in the file as "tracemalloc overhead"), so it is never on in normal use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import tracemalloc
from collections.abc import Mapping
from pathlib import Path

_log = logging.getLogger(__name__)
ENV_PATH = "FAMILIAR_TRACEMALLOC"
ENV_SECONDS = "FAMILIAR_TRACEMALLOC_SECONDS"
ENV_FRAMES = "FAMILIAR_TRACEMALLOC_FRAMES"  # frames kept per allocation (default 1: each costs memory)
TOP = 25


def start(env: Mapping[str, str] = os.environ) -> asyncio.Task[None] | None:
    """Start tracing and the snapshot loop when the environment asks for it; None when it does not."""
    target = env.get(ENV_PATH, "")
    if not target:
        return None
    seconds = float(env.get(ENV_SECONDS, "300") or 300)
    tracemalloc.start(int(env.get(ENV_FRAMES, "1") or 1))
    return asyncio.get_running_loop().create_task(_loop(Path(target), seconds), name="tracemalloc snapshots")


async def stop(task: asyncio.Task[None] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    tracemalloc.stop()


def _filtered(snapshot: tracemalloc.Snapshot) -> tracemalloc.Snapshot:
    return snapshot.filter_traces(
        (
            tracemalloc.Filter(inclusive=False, filename_pattern=tracemalloc.__file__),
            tracemalloc.Filter(inclusive=False, filename_pattern="<frozen importlib._bootstrap*>"),
        )
    )


def report(baseline: tracemalloc.Snapshot, now: tracemalloc.Snapshot, minutes: float) -> str:
    """The growth from `baseline` to `now`, by line and by call stack, as text."""
    traced, peak = tracemalloc.get_traced_memory()
    lines = [
        f"minutes since baseline: {minutes:.1f}",
        f"traced now: {traced / 2**20:.1f} MiB (peak {peak / 2**20:.1f} MiB)",
        f"tracemalloc overhead: {tracemalloc.get_tracemalloc_memory() / 2**20:.1f} MiB",
        f"top {TOP} growth by line:",
    ]
    for stat in now.compare_to(baseline, "lineno")[:TOP]:
        lines.append(f"  {stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks  {stat.traceback[0]}")
    lines.append("top 5 growth by call stack:")
    for stat in now.compare_to(baseline, "traceback")[:5]:
        lines.append(f"  {stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks")
        lines.extend(f"      {frame}" for frame in stat.traceback.format()[::2])
    return "\n".join(lines) + "\n"


def _write(target: Path, baseline: tracemalloc.Snapshot, since: float) -> None:
    text = report(baseline, _filtered(tracemalloc.take_snapshot()), (time.monotonic() - since) / 60)
    try:
        partial = target.with_name(target.name + ".partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(target)  # whole or not at all, for a reader
    except OSError as exc:
        _log.warning("cannot write the tracemalloc report to %s: %s", target, exc.strerror or exc)


async def _loop(target: Path, seconds: float) -> None:
    # Snapshots take a while on a big heap: in a thread, so the loop keeps answering meanwhile.
    await asyncio.sleep(seconds)
    baseline = await asyncio.to_thread(lambda: _filtered(tracemalloc.take_snapshot()))
    since = time.monotonic()
    while True:
        await asyncio.sleep(seconds)
        await asyncio.to_thread(_write, target, baseline, since)
