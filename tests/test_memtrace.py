"""app/memtrace.py: the tracemalloc hook of bench/bench_soak.py, off unless FAMILIAR_TRACEMALLOC is set."""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path

import pytest

from app import memtrace

pytestmark = pytest.mark.asyncio


async def test_off_by_default() -> None:
    assert memtrace.start({}) is None
    assert not tracemalloc.is_tracing()


async def _report(path: Path, frames: str) -> str:
    task = memtrace.start({memtrace.ENV_PATH: str(path), memtrace.ENV_SECONDS: "0.05", memtrace.ENV_FRAMES: frames})
    assert task is not None
    assert tracemalloc.is_tracing() == (frames != "0")
    try:
        kept: list[object] = []
        async with asyncio.timeout(20):
            while not await asyncio.to_thread(path.exists):
                kept.append(_Grows())
                await asyncio.sleep(0.01)
        return await asyncio.to_thread(path.read_text, encoding="utf-8")
    finally:
        await memtrace.stop(task)
        assert not tracemalloc.is_tracing()


class _Grows:
    pass


async def test_writes_what_grew(tmp_path: Path) -> None:
    text = await _report(tmp_path / "trace.txt", "1")
    assert "tracemalloc overhead:" in text
    assert "growth by line:" in text
    assert "_Grows" in text


async def test_frames_0_counts_objects_only(tmp_path: Path) -> None:
    text = await _report(tmp_path / "trace.txt", "0")
    assert "_Grows" in text
    assert "tracemalloc" not in text
