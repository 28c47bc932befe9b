"""A small tmpfs as a familiar's disk, filled up and freed by the test (Linux, as root).

`mount -t tmpfs -o size=...` needs root (or CAP_SYS_ADMIN); where it is refused the test is skipped
with the reason. The mount is always taken down again, busy or not."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

DEFAULT_SIZE = "40m"


class SmallDisk:
    """A mounted tmpfs at `path`; `fill()` takes every free byte with a filler file, `free()` gives them back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._filler = path / "filler.bin"

    @property
    def free_bytes(self) -> int:
        return shutil.disk_usage(self.path).free

    def fill(self) -> None:
        """Write the filler until the disk refuses even one more byte (ENOSPC)."""
        fd = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (1 << 20, 1 << 14, 512, 1):
                block = b"\0" * size
                while True:
                    try:
                        os.write(fd, block)
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        break
        finally:
            os.close(fd)
        assert self.free_bytes == 0, f"the disk still has {self.free_bytes} bytes free"

    def free(self) -> None:
        self._filler.unlink(missing_ok=True)


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


@contextlib.contextmanager
def mounted(path: Path, size: str = DEFAULT_SIZE) -> Iterator[SmallDisk]:
    if not sys.platform.startswith("linux"):
        pytest.skip("a small tmpfs is mounted on Linux only")
    if shutil.which("mount") is None or shutil.which("umount") is None:
        pytest.skip("no mount / umount command here")
    path.mkdir(parents=True, exist_ok=True)
    done = _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path))
    if done.returncode != 0:
        pytest.skip(f"mounting a {size} tmpfs is not permitted here: {done.stderr.strip() or done.returncode}")
    try:
        yield SmallDisk(path)
    finally:
        if _run("umount", str(path)).returncode != 0:
            _run("umount", "-l", str(path))  # still busy (a process the test started): detach it now
