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
from pathlib import Path
from typing import TYPE_CHECKING

from app.config.errors import ConfigError
from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.console import error, output
from app.runtime.errors import FamiliarError
from app.runtime.events import Activity, ConnectionChanged, FailureReported, GuildsChanged, RuntimeEvent
from app.runtime.service import Familiar

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

_log = logging.getLogger("familiar")
_STARTED = time.perf_counter()

EXIT_OK, EXIT_FAILURE, EXIT_CONFIG = 0, 1, 2
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
def _qt_app(*, offscreen: bool = False) -> QApplication:
    os.environ.setdefault("QT_API", "pyside6")  # qasync picks its binding from this
    if offscreen:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    app.setApplicationName("Familiar")
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
    app = _qt_app()
    import qasync

    from app.ui.dialogs.startup_error import show_startup_error
    from app.ui.main_window import MainWindow

    problem = _unknown_pane(pane)
    if problem is not None:
        error(problem)
        return EXIT_USAGE
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
        familiar.start_watching()
        window = MainWindow(familiar, pane=pane)
        closed = asyncio.Event()
        window.destroyed.connect(closed.set)
        app.lastWindowClosed.connect(closed.set)
        window.show()
        if probe:
            output(f"window shown after {time.perf_counter() - _STARTED:.3f} s on the {window.current_pane.name} pane")
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


def run_screenshot(paths: FamiliarPaths, pane: str, out: Path, size: tuple[int, int]) -> int:
    """`familiar screenshot`: the window offscreen on `pane` over this familiar's data, as a PNG."""
    _qt_app(offscreen=True)
    import qasync

    from app.ui.screenshot import save_screenshot

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
