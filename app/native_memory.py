"""glibc's malloc over a long run: fewer arenas, and free memory handed back to the system.

glibc gives each thread that allocates its own arena (up to 8 per core). The familiar runs many threads:
two aiosqlite connections, the asyncio executor, tantivy's indexing, merging and segment threads for each
index. Memory freed in one arena is reused only by the threads of that arena, so a long run spreads over
many half-empty arenas: measured with bench/bench_soak.py, the headless familiar sat at 240 MB after
four minutes with the default arenas and at 134 MB with two. `limit_arenas()` asks for two (before the
threads start); `trim()` (malloc_trim) returns free pages of every arena to the system, which glibc
otherwise does only at the top of the main heap.

Elsewhere (macOS, Windows, musl) there is no glibc: both do nothing. A MALLOC_ARENA_MAX set in the
environment wins over `limit_arenas()`.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import logging
import os
import sys

_log = logging.getLogger(__name__)
M_ARENA_MAX = -8  # glibc's <malloc.h>
ARENAS = 2
TRIM_SECONDS = 60.0


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it (musl's libc.so.6 would not)
        libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        libc.malloc_trim.argtypes = (ctypes.c_size_t,)
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(count: int = ARENAS) -> bool:
    """At most `count` malloc arenas from now on (call it before threads start); True when applied."""
    libc = _glibc()
    if libc is None or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return bool(libc.mallopt(M_ARENA_MAX, count))


def trim() -> bool:
    """Hand free malloc memory back to the system; True when some was."""
    libc = _glibc()
    return libc is not None and bool(libc.malloc_trim(0))


async def trim_every(seconds: float = TRIM_SECONDS) -> None:
    """`trim()` every `seconds` until cancelled (in a thread: it walks every arena)."""
    if _glibc() is None:
        return
    while True:
        await asyncio.sleep(seconds)
        await asyncio.to_thread(trim)
