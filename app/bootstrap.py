"""Composition root: store -> runtime -> window (or headless). Owns lifetimes; the one module that
imports every layer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time

from app.config.errors import ConfigError
from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.console import error, output
from app.runtime.errors import FamiliarError
from app.runtime.events import Activity, ConnectionChanged, FailureReported, GuildsChanged, RuntimeEvent
from app.runtime.service import Familiar

_log = logging.getLogger("familiar")
_STARTED = time.perf_counter()

EXIT_OK, EXIT_FAILURE, EXIT_CONFIG = 0, 1, 2


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


async def _open(paths: FamiliarPaths) -> Familiar:
    return await Familiar.open(paths, SecretStore(paths.name, paths.secrets_file))


async def open_or_explain(paths: FamiliarPaths) -> Familiar | int:
    """Open the familiar for a terminal command; on failure print one line and return the exit code."""
    try:
        return await _open(paths)
    except ConfigError as exc:
        error(str(exc))
        return EXIT_CONFIG
    except FamiliarError as exc:
        error(str(exc))
        return EXIT_FAILURE


# -- headless ------------------------------------------------------------------------------------
def _log_event(event: RuntimeEvent) -> None:
    if isinstance(event, ConnectionChanged):
        _log.info("connection: %s %s", event.state.value, event.detail)
    elif isinstance(event, GuildsChanged):
        _log.info("guilds: %s", ", ".join(g.name for g in event.guilds) or "none")
    elif isinstance(event, Activity):
        _log.info("%s %s %s", event.kind.value, event.where, event.summary)
    elif isinstance(event, FailureReported):
        _log.error("%s", event.message)


async def _headless(paths: FamiliarPaths) -> int:
    problem = _check_data_root(paths)
    if problem:
        error(problem)
        return EXIT_FAILURE
    familiar = await open_or_explain(paths)
    if isinstance(familiar, int):
        return familiar
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):  # Windows: Ctrl-C still raises KeyboardInterrupt
            loop.add_signal_handler(signum, stop.set)
    familiar.subscribe(_log_event)
    try:
        try:
            # Without a window nobody would see a dead endpoint until the first reply fails: check it
            # once before going live, and refuse to start without it.
            _log.info("LLM endpoint: %s", await familiar.test_llm_endpoint())
            await familiar.start()
            await familiar.start_learning()
        except FamiliarError as exc:
            error(str(exc))
            return EXIT_FAILURE
        _log.info("familiar '%s' is running; press Ctrl-C to stop", paths.name)
        stopped = asyncio.create_task(stop.wait())
        ended = asyncio.create_task(familiar.wait_closed())
        await asyncio.wait({stopped, ended}, return_when=asyncio.FIRST_COMPLETED)
        for task in (stopped, ended):
            task.cancel()
        if ended.done() and not ended.cancelled() and ended.result() is not None:
            error(familiar.get_status().last_error or str(ended.result()))
            return EXIT_FAILURE
        _log.info("stopping")
        return EXIT_OK
    finally:
        await familiar.close()


def run_headless(paths: FamiliarPaths) -> int:
    try:
        return asyncio.run(_headless(paths))
    except KeyboardInterrupt:
        return EXIT_OK


# -- window --------------------------------------------------------------------------------------
def run_window(paths: FamiliarPaths) -> int:
    os.environ.setdefault("QT_API", "pyside6")  # qasync picks its binding from this
    import qasync

    from app.ui.dialogs.startup_error import show_startup_error
    from app.ui.icons import app_icon
    from app.ui.main_window import MainWindow
    from app.ui.platform_guard import start_application

    app = start_application(sys.argv)  # a platform plugin that cannot start: one line and exit 1, not an abort
    app.setApplicationName("Familiar")
    app.setWindowIcon(app_icon())  # every window and dialog, and the task bar
    app.setDesktopFileName("familiar")  # Wayland shows the icon of familiar.desktop (installers/linux)
    app.setQuitOnLastWindowClosed(False)  # the loop must outlive the window to close the store cleanly
    exit_code = EXIT_OK
    probe = os.environ.get("FAMILIAR_BENCH_EXIT_WHEN_SHOWN") == "1"

    async def main() -> None:
        nonlocal exit_code
        problem = _check_data_root(paths)
        familiar: Familiar | None = None
        if problem is None:
            try:
                familiar = await _open(paths)
            except ConfigError as exc:
                problem, exit_code = str(exc), EXIT_CONFIG
            except FamiliarError as exc:
                problem, exit_code = str(exc), EXIT_FAILURE
        if familiar is None:
            exit_code = exit_code or EXIT_FAILURE
            error(problem or "Familiar could not start.")
            await show_startup_error(problem or "Familiar could not start.")
            return
        await familiar.start_learning()
        window = MainWindow(familiar)
        closed = asyncio.Event()
        window.destroyed.connect(closed.set)
        app.lastWindowClosed.connect(closed.set)
        window.show()
        if probe:
            output(f"window shown after {time.perf_counter() - _STARTED:.3f} s")
            closed.set()
        else:
            window.maybe_show_first_run()
        try:
            await closed.wait()
        finally:
            await window.shutdown()
            await familiar.close()
            window.deleteLater()

    qasync.run(main())
    return exit_code
