"""Can Qt open a window here? Asked before Qt loads a platform plugin, so the answer is a clear line, not an abort.

On Linux, Qt aborts (exit 134) when no platform plugin can start: when there is no display, or when a system
library the xcb or wayland plugin links against is not installed; its own message then often names the wrong
package. This module finds out first, with no Qt import: it picks the plugins Qt would try (QT_QPA_PLATFORM, else
wayland when WAYLAND_DISPLAY or XDG_SESSION_TYPE say so, then xcb), checks that each has a display that answers,
reads the plugin's ELF dependencies (and those of the Qt libraries beside it) and asks the dynamic loader for
every system library among them. When no plugin can start, `window_problem` returns one line naming the missing
packages for Debian/Ubuntu, Fedora and Arch and the headless alternative. On other systems it returns None.
It never blocks on doubt: a plugin it cannot find, or a platform it does not know, is left to Qt.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import socket
import struct
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

HEADLESS = "familiar run --headless"

# soname -> (Debian/Ubuntu, Fedora, Arch) package. Everything Qt's xcb and wayland plugins and the Qt libraries
# beside them load from the system, as PySide6 6.8-6.11 link them.
_PACKAGES: dict[str, tuple[str, str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util", "xcb-util"),
    "libxcb.so.1": ("libxcb1", "libxcb", "libxcb"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb", "libx11"),
    "libX11.so.6": ("libx11-6", "libX11", "libx11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon", "libxkbcommon"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11", "libxkbcommon-x11"),
    "libwayland-client.so.0": ("libwayland-client0", "libwayland-client", "wayland"),
    "libwayland-cursor.so.0": ("libwayland-cursor0", "libwayland-cursor", "wayland"),
    "libwayland-egl.so.1": ("libwayland-egl1", "libwayland-egl", "wayland"),
    "libGL.so.1": ("libgl1", "libglvnd-glx", "libglvnd"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl", "libglvnd"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl", "libglvnd"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype", "freetype2"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2", "glib2"),
    "libgthread-2.0.so.0": ("libglib2.0-0", "glib2", "glib2"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs", "dbus"),
}
_FAMILIES = (("Debian/Ubuntu", "sudo apt install"), ("Fedora", "sudo dnf install"), ("Arch", "sudo pacman -S"))
_PLUGIN_FILES = {"xcb": ("libqxcb.so",), "wayland": ("libqwayland.so", "libqwayland-generic.so")}


@dataclass(frozen=True, slots=True)
class DynamicSection:
    """What an ELF shared object asks of the dynamic loader: the libraries it needs and where to look first."""

    needed: tuple[str, ...]
    search_path: tuple[str, ...]  # DT_RUNPATH, else DT_RPATH, entries as written ($ORIGIN unexpanded)


def window_problem(env: Mapping[str, str] | None = None, *, platform: str = sys.platform) -> str | None:
    """None when Qt can open a window here (or when this cannot be told); else one line saying why not."""
    if not platform.startswith("linux"):
        return None
    environ = os.environ if env is None else env
    no_display: list[str] = []
    missing: dict[str, list[str]] = {}  # plugin -> sonames the loader cannot load
    for name in qt_platform_order(environ):
        kind = "wayland" if name.startswith("wayland") else name
        if kind not in _PLUGIN_FILES:
            return None  # offscreen, vnc, eglfs...: the user chose it; Qt needs no display for it here
        reason = _display_problem(kind, environ)
        if reason is not None:
            no_display.append(reason)
            continue
        plugin = find_platform_plugin(kind, environ)
        if plugin is None:
            return None  # Qt may find it elsewhere (qt.conf): let it try
        lacking = missing_libraries(plugin)
        if not lacking:
            return None
        missing[kind] = lacking
    if missing:
        return _missing_message(missing)
    return f"cannot open a window: {'; '.join(no_display)}. To run without a window: {HEADLESS}"


def qt_platform_order(env: Mapping[str, str]) -> list[str]:
    """The platform plugins Qt 6 tries, in order (QT_QPA_PLATFORM, or the session's display servers)."""
    chosen = env.get("QT_QPA_PLATFORM", "").strip()
    if chosen:
        return [part.split(":", 1)[0].strip() for part in chosen.split(";") if part.strip()]
    order = []
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland":
        order.append("wayland")
    order.append("xcb")
    return order


# -- displays ----------------------------------------------------------------------------------------
_X_DISPLAY = re.compile(r"^(?:(?P<host>[^:]*?)/?)?:(?P<number>\d+)(?:\.\d+)?$")
_PROBE_SECONDS = 1.0


def _display_problem(kind: str, env: Mapping[str, str]) -> str | None:
    if kind == "xcb":
        return _x11_problem(env.get("DISPLAY", ""))
    return _wayland_problem(env)


def _x11_problem(display: str) -> str | None:
    if not display:
        return "no display (DISPLAY is not set: no X server, as on a server or over plain SSH)"
    match = _X_DISPLAY.match(display)
    if match is None:
        return None  # a form we do not parse: leave it to Qt
    host, number = (match.group("host") or "").removeprefix("unix"), int(match.group("number"))
    if host in ("", "/"):
        path = f"/tmp/.X11-unix/X{number}"
        if _unix_answers("\0" + path) or _unix_answers(path):
            return None
    elif host in ("localhost", "127.0.0.1", "::1"):
        if _tcp_answers("127.0.0.1" if host != "::1" else host, 6000 + number):
            return None
    else:
        return None  # a remote X server: not probed (it could take a network timeout)
    return f"no X server answers at DISPLAY={display}"


def _wayland_problem(env: Mapping[str, str]) -> str | None:
    name = env.get("WAYLAND_DISPLAY") or "wayland-0"
    if os.path.isabs(name):
        path = name
    elif env.get("XDG_RUNTIME_DIR"):
        path = os.path.join(env["XDG_RUNTIME_DIR"], name)
    else:
        return "no Wayland display (XDG_RUNTIME_DIR is not set)"
    if _unix_answers(path):
        return None
    return f"no Wayland compositor answers at {path}"


def _unix_answers(address: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(_PROBE_SECONDS)
        try:
            probe.connect(address)
        except OSError:
            return False
    return True


def _tcp_answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=_PROBE_SECONDS):
            return True
    except OSError:
        return False


# -- libraries ---------------------------------------------------------------------------------------
def find_platform_plugin(kind: str, env: Mapping[str, str]) -> Path | None:
    """The plugin file Qt would load for `kind` (xcb, wayland), found without importing PySide6."""
    folders: list[Path] = []
    if env.get("QT_QPA_PLATFORM_PLUGIN_PATH"):
        folders.append(Path(env["QT_QPA_PLATFORM_PLUGIN_PATH"]))
    folders += [Path(entry) / "platforms" for entry in env.get("QT_PLUGIN_PATH", "").split(os.pathsep) if entry]
    spec = importlib.util.find_spec("PySide6")  # finds the package without running it
    if spec is not None and spec.submodule_search_locations:
        folders += [Path(entry) / "Qt" / "plugins" / "platforms" for entry in spec.submodule_search_locations]
    for folder in folders:
        for filename in _PLUGIN_FILES[kind]:
            if (folder / filename).is_file():
                return folder / filename
    return None


def missing_libraries(plugin: Path) -> list[str]:
    """The system libraries `plugin` needs (directly or through the Qt libraries it links) that cannot be loaded.

    Libraries found on an object's own RUNPATH (the Qt libraries beside the plugin) are read in turn; every other
    one is handed to the dynamic loader, exactly as Qt's loading will, so a library that is present but broken,
    or whose own dependency is missing, counts too (under the name the loader gives).
    """
    missing: list[str] = []
    seen: set[str] = set()
    queue = [plugin]
    while queue:
        current = queue.pop()
        try:
            section = read_dynamic_section(current)
        except (OSError, ValueError):
            continue  # not an ELF object we can read: Qt will say what it makes of it
        for soname in section.needed:
            if soname in seen:
                continue
            seen.add(soname)
            bundled = _on_search_path(soname, section.search_path, current.parent)
            if bundled is not None:
                queue.append(bundled)
                continue
            failure = _load_failure(soname)
            if failure is not None and failure not in missing:
                missing.append(failure)
    return missing


def _on_search_path(soname: str, search_path: Sequence[str], origin: Path) -> Path | None:
    for entry in search_path:
        folder = Path(entry.replace("${ORIGIN}", str(origin)).replace("$ORIGIN", str(origin)))
        if (folder / soname).is_file():
            return folder / soname
    return None


def _load_failure(soname: str) -> str | None:
    """None when the loader can load `soname`; else the name of the library it could not load."""
    try:
        ctypes.CDLL(soname, mode=os.RTLD_LAZY | os.RTLD_LOCAL)
    except OSError as exc:
        # "libfoo.so.1: cannot open shared object file: ..." names the library that failed, which may be a
        # dependency of `soname`; "/path/libfoo.so.1: invalid ELF header" names a broken file.
        culprit = str(exc).split(": ", 1)[0].strip()
        name = os.path.basename(culprit)
        return name if name.startswith("lib") and ".so" in name else soname
    return None


_ELF_MAGIC = b"\x7fELF"
_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 10, 15, 29


def read_dynamic_section(path: Path) -> DynamicSection:
    """DT_NEEDED and DT_RUNPATH/DT_RPATH of an ELF shared object (32 or 64 bit, either byte order)."""
    with path.open("rb") as handle:
        ident = handle.read(16)
        if len(ident) < 16 or ident[:4] != _ELF_MAGIC or ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise ValueError(f"{path} is not an ELF file")
        wide, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
        header = struct.Struct(order + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH"))
        fields = header.unpack(_read(handle, 16, header.size))
        phoff, phentsize, phnum = fields[4], fields[8], fields[9]
        segment = struct.Struct(order + ("IIQQQQQQ" if wide else "IIIIIIII"))
        loads: list[tuple[int, int, int]] = []  # (vaddr, filesz, offset)
        dynamic: tuple[int, int] | None = None  # (offset, filesz)
        for index in range(phnum):
            raw = segment.unpack(_read(handle, phoff + index * phentsize, segment.size))
            if wide:
                kind, offset, vaddr, filesz = raw[0], raw[2], raw[3], raw[5]
            else:
                kind, offset, vaddr, filesz = raw[0], raw[1], raw[2], raw[4]
            if kind == _PT_LOAD:
                loads.append((vaddr, filesz, offset))
            elif kind == _PT_DYNAMIC:
                dynamic = (offset, filesz)
        if dynamic is None:
            return DynamicSection((), ())
        entry = struct.Struct(order + ("qQ" if wide else "iI"))
        tags = [entry.unpack_from(_read(handle, *dynamic), at) for at in range(0, dynamic[1], entry.size)]
        values: dict[int, list[int]] = {}
        for tag, value in _until_null(tags):
            values.setdefault(tag, []).append(value)
        if _DT_STRTAB not in values or _DT_STRSZ not in values:
            return DynamicSection((), ())
        strtab_offset = _file_offset(values[_DT_STRTAB][0], loads)
        strings = _read(handle, strtab_offset, values[_DT_STRSZ][0])

    def text(at: int) -> str:
        return strings[at : strings.index(b"\0", at)].decode("utf-8", "replace")

    needed = tuple(text(at) for at in values.get(_DT_NEEDED, []))
    paths = values.get(_DT_RUNPATH) or values.get(_DT_RPATH) or []
    search = tuple(part for at in paths for part in text(at).split(":") if part)
    return DynamicSection(needed, search)


def _until_null(tags: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    for tag, value in tags:
        if tag == _DT_NULL:
            return
        yield tag, value


def _read(handle: BinaryIO, offset: int, size: int) -> bytes:
    handle.seek(offset)
    data: bytes = handle.read(size)
    if len(data) != size:
        raise ValueError("truncated ELF file")
    return data


def _file_offset(address: int, loads: list[tuple[int, int, int]]) -> int:
    for vaddr, filesz, offset in loads:
        if vaddr <= address < vaddr + filesz:
            return address - vaddr + offset
    raise ValueError("the string table lies outside every loaded segment")


# -- the message -------------------------------------------------------------------------------------
def _missing_message(missing: Mapping[str, Sequence[str]]) -> str:
    sonames = list(dict.fromkeys(name for names in missing.values() for name in names))
    plugins = " and ".join(f"{kind} plugin" for kind in missing)
    known = [_PACKAGES[name] for name in sonames if name in _PACKAGES]
    unknown = [name for name in sonames if name not in _PACKAGES]
    installs = []
    for column, (family, command) in enumerate(_FAMILIES):
        packages = list(dict.fromkeys(row[column] for row in known))
        if packages:
            installs.append(f"{family}: {command} {' '.join(packages)}")
    advice = " and ".join(
        [
            *([f"install them ({'; '.join(installs)})"] if installs else []),
            *([f"install the package that provides {', '.join(unknown)}"] if unknown else []),
        ]
    )
    return (
        f"cannot open a window: Qt's {plugins} needs {', '.join(sonames)}, which the system cannot load;"
        f" {advice}, or run without a window: {HEADLESS}"
    )
