"""A diagnostic hook, off by default: `FAMILIAR_TRACEMALLOC=<file>` makes headless mode trace Python
allocations and rewrite <file> every `FAMILIAR_TRACEMALLOC_SECONDS` (default 300) with what grew since
the first snapshot (taken one interval after start, once start-up allocations have settled), and
`FAMILIAR_TRACEMALLOC_FRAMES` (default 1) frames of each allocation's stack are kept. The file also
counts the live objects by type (gc), which costs nothing in between.

Used by bench/bench_soak.py to find what grows over a long run. Tracing costs CPU and memory of its own:
measured, it took the headless familiar's RSS from 130 to 240 MB, far more than the "tracemalloc
overhead" it reports. `FAMILIAR_TRACEMALLOC_FRAMES=0` keeps only the object counts, for a run whose RSS
is the figure.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import time
import tracemalloc
from collections import Counter
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
    frames = int(env.get(ENV_FRAMES, "1") or 0)
    if frames > 0:
        tracemalloc.start(frames)
    return asyncio.get_running_loop().create_task(_loop(Path(target), seconds), name="tracemalloc snapshots")


async def stop(task: asyncio.Task[None] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    if tracemalloc.is_tracing():
        tracemalloc.stop()


def _filtered(snapshot: tracemalloc.Snapshot) -> tracemalloc.Snapshot:
    return snapshot.filter_traces(
        (
            tracemalloc.Filter(inclusive=False, filename_pattern=tracemalloc.__file__),
            tracemalloc.Filter(inclusive=False, filename_pattern="<frozen importlib._bootstrap*>"),
        )
    )


def _types() -> Counter[str]:
    return Counter(type(o).__qualname__ for o in gc.get_objects())


def report(
    baseline: tuple[tracemalloc.Snapshot | None, Counter[str]],
    now: tuple[tracemalloc.Snapshot | None, Counter[str]],
    minutes: float,
) -> str:
    """The growth from `baseline` to `now`: objects by type, and (when tracing) by line and by call stack."""
    (then_snapshot, then_types), (now_snapshot, now_types) = baseline, now
    lines = [f"minutes since baseline: {minutes:.1f}", f"objects now: {now_types.total()}"]
    grown = sorted(((now_types[t] - then_types[t], t) for t in now_types | then_types), reverse=True)
    lines.append("top 15 growth in objects by type:")
    lines.extend(f"  {diff:+9d}  {name} ({now_types[name]})" for diff, name in grown[:15])
    if then_snapshot is None or now_snapshot is None:
        return "\n".join(lines) + "\n"
    traced, peak = tracemalloc.get_traced_memory()
    lines += [
        f"traced now: {traced / 2**20:.1f} MiB (peak {peak / 2**20:.1f} MiB)",
        f"tracemalloc overhead: {tracemalloc.get_tracemalloc_memory() / 2**20:.1f} MiB",
        f"top {TOP} growth by line:",
    ]
    for stat in now_snapshot.compare_to(then_snapshot, "lineno")[:TOP]:
        lines.append(f"  {stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks  {stat.traceback[0]}")
    lines.append("top 5 growth by call stack:")
    for stat in now_snapshot.compare_to(then_snapshot, "traceback")[:5]:
        lines.append(f"  {stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks")
        lines.extend(f"      {frame}" for frame in stat.traceback.format()[::2])
    return "\n".join(lines) + "\n"


def _look() -> tuple[tracemalloc.Snapshot | None, Counter[str]]:
    snapshot = _filtered(tracemalloc.take_snapshot()) if tracemalloc.is_tracing() else None
    return snapshot, _types()


def _write(target: Path, baseline: tuple[tracemalloc.Snapshot | None, Counter[str]], since: float) -> None:
    text = report(baseline, _look(), (time.monotonic() - since) / 60)
    try:
        partial = target.with_name(target.name + ".partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(target)  # whole or not at all, for a reader
    except OSError as exc:
        _log.warning("cannot write the tracemalloc report to %s: %s", target, exc.strerror or exc)


async def _loop(target: Path, seconds: float) -> None:
    # Snapshots take a while on a big heap: in a thread, so the loop keeps answering meanwhile.
    await asyncio.sleep(seconds)
    baseline = await asyncio.to_thread(_look)
    since = time.monotonic()
    while True:
        await asyncio.sleep(seconds)
        await asyncio.to_thread(_write, target, baseline, since)
