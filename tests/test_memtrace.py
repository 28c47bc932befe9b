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


async def test_writes_what_grew(tmp_path: Path) -> None:
    report = tmp_path / "trace.txt"
    task = memtrace.start({memtrace.ENV_PATH: str(report), memtrace.ENV_SECONDS: "0.05"})
    assert task is not None
    try:
        kept = []
        async with asyncio.timeout(20):
            while not report.exists():
                kept.append(["grows"] * 1000)
                await asyncio.sleep(0.01)
        text = report.read_text(encoding="utf-8")
    finally:
        await memtrace.stop(task)
    assert "tracemalloc overhead:" in text
    assert "growth by line:" in text
    assert not tracemalloc.is_tracing()
