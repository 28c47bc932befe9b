"""How the process stops on SIGTERM and Ctrl-C (app/bootstrap.py StopSignals), in child processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# A process whose clean stop never finishes (request_stop does nothing), as if its shutdown hung.
_HUNG = """
import asyncio, os, signal, sys
from app.bootstrap import StopSignals

async def main():
    with StopSignals(lambda: print("stop asked", flush=True), grace={grace}):
        print("ready", flush=True)
        for _ in range({signals}):
            os.kill(os.getpid(), signal.{name})
        await asyncio.sleep(60)
    print("not stopped", flush=True)

asyncio.run(main())
"""


def _run(grace: float, signals: int, name: str = "SIGTERM") -> tuple[int, str, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _HUNG.format(grace=grace, signals=signals, name=name)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_second_signal_stops_at_once(name: str) -> None:
    code, out, err, took = _run(grace=30, signals=2, name=name)
    assert code == 1
    assert out.splitlines()[0] == "ready"
    assert err == f"familiar: {name} again: stopping at once\n"
    assert took < 20  # not the 30 s grace, nor the 60 s sleep


def test_a_clean_stop_that_hangs_ends_after_the_grace() -> None:
    code, out, err, took = _run(grace=0.5, signals=1)
    assert code == 1
    assert out.splitlines() == ["ready", "stop asked"]
    assert err == "familiar: still stopping after 0.5 s: exiting now\n"
    assert took < 20


def test_handlers_are_restored_afterwards() -> None:
    import asyncio

    from app.bootstrap import StopSignals

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)

    async def main() -> None:
        with StopSignals(lambda: None):
            assert signal.getsignal(signal.SIGTERM) not in before

    asyncio.run(main())
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
