"""Composition root: store -> runtime -> window (or headless). Owns lifetimes; the one module that
imports every layer."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from app import memtrace, native_memory
from app.config.errors import ConfigError
from app.config.paths import FamiliarPaths
from app.console import error, output
from app.runtime.errors import FamiliarError
from app.runtime.event_log import EventLog
from app.runtime.hints import terminal_text

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

    from app.logs import LogSetup
    from app.runtime.service import Familiar

_log = logging.getLogger("familiar")
_STARTED = time.perf_counter()

EXIT_OK, EXIT_FAILURE, EXIT_CONFIG = 0, 1, 2
_T = TypeVar("_T")
STOP_GRACE = 10.0  # seconds from the first SIGTERM / Ctrl-C to a forced exit, if the clean stop hangs
SIGNAL_WAKE_MS = 200  # under Qt, how often Python gets a chance to run a pending signal handler
EXIT_USAGE = 2  # a command line naming something that does not exist


def _check_data_root(paths: FamiliarPaths) -> str | None:
    try:
        paths.folder.mkdir(parents=True, exist_ok=True)
        probe = paths.folder / ".write-test"
        probe.write_text("ok", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return f"Cannot write to the data folder {paths.folder}: {reason}. Set FAMILIAR_HOME to another folder."
    return None


async def _open(paths: FamiliarPaths, *, reading: bool = False) -> Familiar:
    # Imported here, not at the top: the window is shown before the store, the index and the clients load.
    from app.config.secrets import SecretStore
    from app.logs import redact_known
    from app.runtime.service import Familiar

    familiar = await Familiar.open(paths, SecretStore(paths.name, paths.secrets_file), reading=reading)
    redact_known(familiar.secret_values)  # no log line, in the file or on the terminal, carries one
    return familiar


async def open_or_explain(paths: FamiliarPaths, *, reading: bool = False) -> Familiar | int:
    """Open the familiar for a terminal command (`reading`: one that only reads, see Familiar.open); on
    failure print one line and return the exit code."""
    try:
        return await _open(paths, reading=reading)
    except ConfigError as exc:
        error(str(exc))
        return EXIT_CONFIG
    except FamiliarError as exc:
        error(str(exc))
        return EXIT_FAILURE
    except Exception as exc:
        if (full := disk_full_problem(exc, paths.folder)) is None:
            raise
        error(full)
        return EXIT_FAILURE


def disk_full_problem(exc: BaseException, folder: Path) -> str | None:
    """The one line for a failure a full disk caused (None for any other): no traceback for it."""
    # Imported only once something failed: the window's path to its first paint loads no store.
    from app.runtime.outage import disk_full_line

    return disk_full_line(exc, folder)


# -- stopping on SIGTERM and Ctrl-C ---------------------------------------------------------------
class StopSignals:
    """SIGTERM and Ctrl-C (SIGINT) stop the process within seconds, whatever it is doing.

    The first one asks for a clean stop (`request_stop`, run on the event loop); a second one, or the clean
    stop still running after `grace` seconds, ends the process at once (the store is SQLite in WAL mode and
    the index is rebuilt from it, so this is as safe as a kill -9). Python-level handlers rather than
    `loop.add_signal_handler`: they also run inside long C calls that check for signals, and under Qt's
    event loop (which only runs them when Python code runs: `wake_python` covers that).
    """

    def __init__(self, request_stop: Callable[[], None], grace: float = STOP_GRACE) -> None:
        self._request_stop = request_stop
        self._grace = grace
        self._loop = asyncio.get_running_loop()
        self._received = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(ValueError, OSError):  # not the main thread, or not on this platform
                self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        # Runs between two bytecodes of the main thread: no logging (its locks), no waiting.
        self._received += 1
        if self._received > 1:
            _exit_now(f"{signal.Signals(signum).name} again: stopping at once")
        self._loop.call_soon_threadsafe(self._stop, signum)
        timer = threading.Timer(self._grace, _exit_now, (f"still stopping after {self._grace:g} s: exiting now",))
        timer.daemon = True
        timer.start()

    def _stop(self, signum: int) -> None:
        _log.info("%s received: stopping (send it again to stop at once)", signal.Signals(signum).name)
        self._request_stop()


def _exit_now(why: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"familiar: {why}\n".encode())
    os._exit(EXIT_FAILURE)


# -- headless ------------------------------------------------------------------------------------
class _Terminal:
    """Headless mode's error lines: worded for a terminal (character.toml, environment variables, not the
    window's Settings), and each printed once (not again when the console already showed it)."""

    def __init__(self, paths: FamiliarPaths, logs: LogSetup | None) -> None:
        self._toml = paths.character_toml
        self._logs = logs

    def error(self, message: str) -> None:
        if self._logs is not None and self._logs.shown(message):
            return
        error(terminal_text(message, self._toml))


async def _headless(paths: FamiliarPaths, logs: LogSetup | None) -> int:
    problem = _check_data_root(paths)
    if problem:
        error(problem)
        return EXIT_FAILURE
    stop = asyncio.Event()
    with StopSignals(stop.set):
        familiar = await _until_stopped(open_or_explain(paths), stop)
        if familiar is None:
            return EXIT_OK
        if isinstance(familiar, int):
            return familiar
        events = EventLog(starting=True)
        familiar.subscribe(events)
        familiar.lore.start_watching()
        tracing = memtrace.start()  # off unless FAMILIAR_TRACEMALLOC names a file (bench/bench_soak.py)
        trimming = asyncio.ensure_future(native_memory.trim_every())
        try:
            return await _serve(familiar, paths, stop, events, _Terminal(paths, logs))
        finally:
            await _cancel(trimming)
            await memtrace.stop(tracing)
            await familiar.close()


async def _until_stopped(work: Awaitable[_T], stop: asyncio.Event) -> _T | None:
    """The result of `work`, or None when a stop was asked for first (the work is then cancelled)."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    if task.cancelled() or task.exception() is not None:
        return None
    return task.result()  # it finished while being cancelled


async def _serve(
    familiar: Familiar, paths: FamiliarPaths, stop: asyncio.Event, events: EventLog, terminal: _Terminal
) -> int:
    async def go_live() -> bool:
        # Without a window nobody would see a dead endpoint until the first reply fails: check it
        # once before going live, and refuse to start without it.
        _log.info("LLM endpoint: %s", await familiar.test_llm_endpoint())
        await familiar.start()
        await familiar.start_learning()
        return True

    try:
        if await _until_stopped(go_live(), stop) is None:
            _log.info("stopping")
            return EXIT_OK
    except FamiliarError as exc:
        terminal.error(str(exc))  # the failure that stopped the start, printed once as the command's error
        return EXIT_FAILURE
    events.starting = False
    _log.info("familiar '%s' is running; press Ctrl-C to stop", paths.name)
    ended = await _until_stopped(familiar.wait_closed(), stop)
    if ended is not None:
        terminal.error(familiar.get_status().last_error or str(ended))
        return EXIT_FAILURE
    _log.info("stopping")
    return EXIT_OK


def run_headless(paths: FamiliarPaths, logs: LogSetup | None = None) -> int:
    try:
        return asyncio.run(_headless(paths, logs))
    except KeyboardInterrupt:
        return EXIT_OK


# -- window --------------------------------------------------------------------------------------
def _qt_app(*, offscreen: bool = False) -> QApplication:
    os.environ.setdefault("QT_API", "pyside6")  # qasync picks its binding from this
    if offscreen:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from app.ui.icons import app_icon
    from app.ui.platform_guard import start_application

    app = start_application(sys.argv)  # a platform plugin that cannot start: one line and exit 1, not an abort
    app.setApplicationName("Familiar")
    app.setWindowIcon(app_icon())  # every window and dialog, and the task bar
    app.setDesktopFileName("familiar")  # Wayland shows the icon of familiar.desktop (installers/linux)
    app.setQuitOnLastWindowClosed(False)  # the loop must outlive the window to close the store cleanly
    return app


def _unknown_pane(pane: str | None) -> str | None:
    """The error for a pane name no pane has (the registry in app/ui/main_window.py is the only list)."""
    from app.ui.main_window import check_pane_name

    if pane is None:
        return None
    try:
        check_pane_name(pane)
    except ValueError as exc:
        return str(exc)
    return None


def run_window(paths: FamiliarPaths, pane: str | None = None) -> int:
    """The window: shown first (on a DeferredFacade, its panes loading), then the familiar opens behind it.

    Cold start: everything the window does not need to draw (the store, the search index, the Discord and
    LLM clients, the embedding model) is imported and opened after its first paint, the runtime's modules
    on a worker thread so the window stays responsive meanwhile.
    """
    app = _qt_app()
    import qasync
    from PySide6.QtCore import QTimer

    from app.config.ui_prefs import UiPreferencesFile, ui_file
    from app.runtime.api.deferred import DeferredFacade
    from app.ui.dialogs.startup_error import show_startup_error
    from app.ui.main_window import MainWindow
    from app.ui.single_instance import SingleInstance, ask_first_instance, instance_key
    from app.ui.theme import ThemeController
    from app.ui.tray import TrayIcon

    problem = _unknown_pane(pane)
    if problem is not None:
        error(problem)
        return EXIT_USAGE
    exit_code = EXIT_OK
    probe = os.environ.get("FAMILIAR_BENCH_EXIT_WHEN_SHOWN") == "1"

    async def main() -> None:
        nonlocal exit_code
        stop = asyncio.Event()
        # Python runs signal handlers only when it runs code; an idle Qt loop runs none: wake it now and then.
        waker = QTimer()
        waker.timeout.connect(lambda: None)
        waker.start(SIGNAL_WAKE_MS)
        async with contextlib.AsyncExitStack() as cleanup:
            cleanup.enter_context(StopSignals(stop.set))
            cleanup.callback(waker.stop)
            problem = _check_data_root(paths)
            if problem is not None:
                exit_code = EXIT_FAILURE
                error(problem)
                await _until_stopped(show_startup_error(problem), stop)
                return
            # One window per familiar: a second launch brings this one forward instead of opening the store twice.
            instance = SingleInstance(paths.folder, instance_key(paths.root, paths.name))
            claim = instance.claim()
            if claim == "running":
                if ask_first_instance(instance.key, pane):
                    output(f"Familiar '{paths.name}' is already open: its window was brought forward.")
                    return
                exit_code = EXIT_FAILURE
                error(
                    f"Familiar '{paths.name}' is already running (process {instance.owner_pid() or '?'}) but its"
                    " window does not answer; stop that process, then start Familiar again"
                )
                return
            cleanup.callback(instance.release)
            prefs = UiPreferencesFile(ui_file())
            theme = ThemeController(app, _theme_choice(prefs.prefs.theme))
            facade = DeferredFacade(paths.name, paths.folder)
            window = MainWindow(
                facade, pane=pane, prefs=prefs, theme=theme, tray=TrayIcon(facade.display_name), root=paths.root
            )
            instance.activated.connect(lambda asked: window.bring_forward(asked or None))
            window.destroyed.connect(stop.set)
            window.closed.connect(stop.set)  # a close to the tray is no close: the familiar keeps running
            if prefs.problem:
                window.notices.show_message(prefs.problem)
            painted = window.first_paint()
            window.show()
            familiar: Familiar | None = None
            try:
                if probe:
                    await _until_stopped(painted, stop)
                    output(
                        f"window shown after {_since_start():.3f} s on the {window.current_pane.name} pane;"
                        f" peak memory {_peak_memory_mb():.1f} MB; cpu {time.process_time():.3f} s"
                    )
                try:
                    familiar = await _until_stopped(_open_behind_window(paths), stop)
                except (ConfigError, FamiliarError) as exc:
                    exit_code = EXIT_CONFIG if isinstance(exc, ConfigError) else EXIT_FAILURE
                    facade.fail(str(exc))
                    error(str(exc))
                    await _until_stopped(show_startup_error(str(exc)), stop)
                    return
                if familiar is None:  # stopped while it opened
                    return
                facade.go_live(familiar)
                window.familiar_ready()
                # What Start and the first reply need, loaded now on a worker thread rather than then on this one.
                warming = asyncio.ensure_future(asyncio.to_thread(_warm_imports))
                cleanup.push_async_callback(_settle, warming)
                cleanup.push_async_callback(_cancel, asyncio.ensure_future(native_memory.trim_every()))
                if probe:
                    output(f"familiar open after {_since_start():.3f} s")
                    stop.set()
                else:
                    window.maybe_show_first_run()
                await stop.wait()
            finally:
                await window.shutdown()
                if familiar is not None:
                    await familiar.close()
                window.deleteLater()

    qasync.run(main())
    return exit_code


def _theme_choice(value: str) -> Literal["system", "light", "dark"]:
    return "light" if value == "light" else "dark" if value == "dark" else "system"


def _warm_imports() -> None:
    # Start and the first reply (openai, discord); saving character.toml or the lorebook, importing lore or a
    # card (tomlkit and the formats), regex keys (regex, re2): commands import these only when they use them.
    for module in ("openai", "app.runtime.discord.client", "app.config.editing", "app.runtime.cards", "regex", "re2"):
        try:
            importlib.import_module(module)
        except ImportError:  # pragma: no cover - an installation problem: the first use will say it
            _log.warning("could not load %s ahead of its first use", module, exc_info=True)


async def _settle(task: asyncio.Future[None]) -> None:
    with contextlib.suppress(Exception):
        await task


async def _cancel(task: asyncio.Future[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _since_start() -> float:
    return time.perf_counter() - _STARTED


def _peak_memory_mb() -> float:
    """The process's peak resident memory so far (0 where the platform does not say: Windows)."""
    try:
        import resource
    except ImportError:
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB elsewhere


async def _open_behind_window(paths: FamiliarPaths) -> Familiar:
    """Open the familiar for the window and start its background work; the window is already shown."""
    # The runtime's imports (store, index, clients) take most of a cold start: on a worker thread, the
    # window keeps painting meanwhile. The timeline book (numpy) too: a command loads it only for an
    # as-of read, the window's Facts timeline would otherwise import it on the loop at its first slice.
    for module in ("app.runtime.service", "app.memory.timeline"):
        await asyncio.to_thread(importlib.import_module, module)
    familiar = await _open(paths)
    familiar.subscribe(EventLog())  # the same event lines as headless mode, in the log file
    try:
        await familiar.start_learning()
        familiar.start_watching()
    except BaseException:
        await familiar.close()
        raise
    return familiar


def run_screenshot(paths: FamiliarPaths, pane: str, out: Path, size: tuple[int, int]) -> int:
    """`familiar screenshot`: the window offscreen on `pane` over this familiar's data, as a PNG (in the
    theme chosen in ui.toml)."""
    app = _qt_app(offscreen=True)
    import qasync

    from app.config.ui_prefs import UiPreferencesFile, ui_file
    from app.ui.screenshot import save_screenshot
    from app.ui.theme import ThemeController

    ThemeController(app, _theme_choice(UiPreferencesFile(ui_file()).prefs.theme))

    problem = _unknown_pane(pane)
    if problem is not None:
        error(problem)
        return EXIT_USAGE
    exit_code = EXIT_OK

    async def main() -> None:
        nonlocal exit_code
        familiar = await open_or_explain(paths)
        if isinstance(familiar, int):
            exit_code = familiar
            return
        try:
            written = await save_screenshot(familiar, pane, out, size)
        except FamiliarError as exc:
            error(str(exc))
            exit_code = EXIT_FAILURE
        else:
            output(f"wrote {written} ({size[0]}x{size[1]}, the {pane} pane)")
        finally:
            await familiar.close()

    qasync.run(main())
    return exit_code
