"""The check before Qt loads its platform plugin: one clear line and a non-zero exit, never Qt's abort.

The end-to-end cases start the real `familiar` in a subprocess with the environment of a desktop that cannot show
the window: a system library of the xcb plugin hidden from the dynamic loader (a broken file of the same name first
on LD_LIBRARY_PATH, which the loader tries and fails on, as Qt's own loading would), no display at all, and a
DISPLAY nobody answers at. A display that answers is an abstract unix socket where an X server would listen.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.platform_check import (
    find_platform_plugin,
    missing_libraries,
    qt_platform_order,
    read_dynamic_section,
    window_problem,
)

REPO = Path(__file__).resolve().parents[1]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Qt's xcb plugin is Linux's")


@contextlib.contextmanager
def x_display() -> Iterator[str]:
    """A DISPLAY value that answers like a local X server (an abstract socket that accepts connections)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for number in range(4200, 4400):
        try:
            listener.bind(f"\0/tmp/.X11-unix/X{number}")
        except OSError:
            continue
        listener.listen(4)
        try:
            yield f":{number}"
        finally:
            listener.close()
        return
    listener.close()
    pytest.fail("no free X display number to stand in for a display")


def silent_display() -> str:
    """A DISPLAY value at which nothing listens."""
    for number in range(4400, 4600):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(f"\0/tmp/.X11-unix/X{number}")
            except OSError:
                continue
        if not Path(f"/tmp/.X11-unix/X{number}").exists():
            return f":{number}"
    pytest.fail("no silent X display number found")


def desktop_env(tmp_path: Path, **values: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("QT_", "FAMILIAR_", "DISCORD_", "WAYLAND_", "XDG_SESSION"))
        and k not in ("DISPLAY", "LD_LIBRARY_PATH")
    }
    env.update({"FAMILIAR_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO), **values})
    return env


def launch(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app"], env=env, capture_output=True, text=True, timeout=60, check=False, cwd=REPO
    )


def assert_one_clear_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode not in (134, -signal.SIGABRT), f"Qt aborted: {result.stderr}"
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout == ""
    assert "familiar run --headless" in lines[0]
    assert "xcb-cursor0 or libxcb-cursor0 is needed" not in lines[0]  # Qt's misleading hint
    return lines[0]


@linux_only
@pytest.mark.slow
def test_a_hidden_xcb_library_is_named_with_its_packages(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "libxcb-cursor.so.0").write_bytes(b"not a shared object")
    with x_display() as display:
        search = os.pathsep.join(filter(None, [str(hidden), os.environ.get("LD_LIBRARY_PATH", "")]))
        result = launch(desktop_env(tmp_path, DISPLAY=display, LD_LIBRARY_PATH=search))
    line = assert_one_clear_line(result)
    assert line.startswith("error: cannot open a window: Qt's xcb plugin needs")
    assert "libxcb-cursor.so.0" in line
    assert "sudo apt install" in line
    assert "libxcb-cursor0" in line
    assert "sudo dnf install" in line
    assert "sudo pacman -S" in line
    assert "xcb-util-cursor" in line
    assert not (tmp_path / "home").exists(), "nothing may be created before the window can open"


@linux_only
@pytest.mark.slow
def test_no_display_says_so_and_offers_headless(tmp_path: Path) -> None:
    line = assert_one_clear_line(launch(desktop_env(tmp_path)))
    assert "no display (DISPLAY is not set" in line


@linux_only
@pytest.mark.slow
def test_a_display_nobody_answers_at_says_so(tmp_path: Path) -> None:
    display = silent_display()
    line = assert_one_clear_line(launch(desktop_env(tmp_path, DISPLAY=display)))
    assert f"no X server answers at DISPLAY={display}" in line


@linux_only
def test_the_xcb_plugin_is_found_and_read_without_importing_qt() -> None:
    plugin = find_platform_plugin("xcb", {})
    assert plugin is not None
    assert plugin.name == "libqxcb.so"
    section = read_dynamic_section(plugin)
    assert "libxcb-icccm.so.4" in section.needed
    assert "libxcb-keysyms.so.1" in section.needed
    assert any("$ORIGIN" in entry for entry in section.search_path)


@linux_only
def test_a_plugin_whose_libraries_all_load_lacks_nothing() -> None:
    plugin = find_platform_plugin("xcb", {})
    assert plugin is not None
    # The offscreen plugin links the Qt libraries and only what the test suite itself needs to draw.
    assert missing_libraries(plugin.parent / "libqoffscreen.so") == []


@linux_only
def test_the_platform_order_follows_qt() -> None:
    assert qt_platform_order({}) == ["xcb"]
    assert qt_platform_order({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}) == ["wayland", "xcb"]
    assert qt_platform_order({"XDG_SESSION_TYPE": "wayland"}) == ["wayland", "xcb"]
    assert qt_platform_order({"QT_QPA_PLATFORM": "wayland:scale=2;xcb"}) == ["wayland", "xcb"]


def test_offscreen_and_other_systems_are_left_to_qt() -> None:
    assert window_problem({"QT_QPA_PLATFORM": "offscreen"}, platform="linux") is None
    assert window_problem({}, platform="win32") is None
    assert window_problem({}, platform="darwin") is None


@linux_only
def test_a_wayland_session_without_a_compositor_falls_back_to_x(tmp_path: Path) -> None:
    with x_display() as display:
        env = {"WAYLAND_DISPLAY": str(tmp_path / "wayland-9"), "DISPLAY": display}
        problem = window_problem(env)
    # Whatever the xcb plugin lacks on this machine, the missing compositor alone does not stop the window.
    assert problem is None or "xcb plugin needs" in problem
    alone = window_problem({"WAYLAND_DISPLAY": str(tmp_path / "wayland-9"), "QT_QPA_PLATFORM": "wayland"})
    assert alone is not None
    assert f"no Wayland compositor answers at {tmp_path / 'wayland-9'}" in alone


@linux_only
@pytest.mark.parametrize("form", ["unix:{n}", ":{n}.0", "localhost:{n}"])
def test_local_display_forms_are_probed(form: str) -> None:
    number = silent_display().lstrip(":")
    display = form.format(n=number)
    problem = window_problem({"DISPLAY": display, "QT_QPA_PLATFORM": "xcb"})
    assert problem is not None
    assert f"no X server answers at DISPLAY={display}" in problem


@linux_only
def test_a_remote_display_is_not_probed() -> None:
    # A remote X server could take a network timeout to answer: left to Qt (here: only the libraries are checked).
    problem = window_problem({"DISPLAY": "far-away.invalid:0", "QT_QPA_PLATFORM": "xcb"})
    assert problem is None or "xcb plugin needs" in problem
