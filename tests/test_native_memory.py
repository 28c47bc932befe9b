"""app/native_memory.py: few malloc arenas however many threads allocate, and trimming on glibc."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app import native_memory

pytestmark = pytest.mark.skipif(native_memory._glibc() is None, reason="glibc only")
REPO = Path(__file__).resolve().parents[1]

# Eight threads allocate and hold memory at once, then glibc's malloc_info counts the arenas ("<heap nr=").
_ARENAS = """
import ctypes, sys, tempfile, threading
from app import native_memory
if sys.argv[1] == "limit":
    assert native_memory.limit_arenas()
held, ready = [], threading.Barrier(9)
def work():
    held.append([bytearray(4096) for _ in range(200)])
    ready.wait()
    ready.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
ready.wait()
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
libc.fclose.argtypes = (ctypes.c_void_p,)
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    stream = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print(open(out.name).read().count("<heap nr="))
ready.wait()
for t in threads:
    t.join()
"""


def _arenas(mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-c", _ARENAS, mode], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return int(done.stdout.strip())


def test_threads_share_at_most_two_arenas() -> None:
    unlimited = _arenas("default")
    assert unlimited > native_memory.ARENAS  # else the test would prove nothing on this machine
    assert _arenas("limit") <= native_memory.ARENAS


def test_an_arena_limit_in_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert not native_memory.limit_arenas()


def test_trim_answers() -> None:
    assert isinstance(native_memory.trim(), bool)
