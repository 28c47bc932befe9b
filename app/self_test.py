"""`familiar --self-test`: does this installation work? Run offscreen, in a familiar made for the purpose.

It opens a temporary familiar (its own data root, no keyring, no environment overrides), appends a turn and finds
it through the full-text index, embeds sentences with the bundled offline model, and builds the main window and
renders every pane it lists. Exit 0 with one line saying what passed, or 1 with one line naming the step that
failed and why. The temporary familiar is removed afterwards. Meant for a fresh install or a built bundle (CI
runs it on the PyInstaller bundle), so it touches nothing of the user's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from app.config.editing import set_values
from app.config.paths import FamiliarPaths, ensure_familiar
from app.config.secrets import SecretStore
from app.console import error, output
from app.memory.records import OWNER_KEY, NewTurn
from app.runtime.service import Familiar

if TYPE_CHECKING:
    from PySide6.QtGui import QImage

    from app.ui.main_window import MainWindow

_log = logging.getLogger(__name__)

T = TypeVar("T")

STEP_SECONDS = 120.0  # the first embedding loads onnxruntime and the model: seconds on a busy machine
SETTLE_SECONDS = 10.0
_SENTENCES = (
    "The cat sleeps on the warm windowsill.",
    "A kitten is napping in the sunny window.",
    "Quarterly tax forms are due at the end of April.",
)


class SelfTestError(Exception):
    """A step of the self-test failed; the message names the step and the reason."""


@contextlib.contextmanager
def _step(name: str) -> Iterator[None]:
    try:
        yield
    except SelfTestError:
        raise
    except Exception as exc:  # any failure of any layer is the answer: one line
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise SelfTestError(f"{name}: {reason}") from exc


async def _bounded(awaitable: Awaitable[T], what: str, seconds: float = STEP_SECONDS) -> T:
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except TimeoutError:
        raise SelfTestError(f"{what}: no answer within {seconds:.0f} s") from None


async def _check_store(familiar: Familiar) -> str:
    with _step("append and search a turn"):
        turn = await familiar.history.append_turn(
            NewTurn(
                platform="local",
                place="local",
                channel_id=0,
                author_key=OWNER_KEY,
                author_name="You",
                content="The lighthouse keeper feeds the grey harbour seals at dawn.",
                created_at=datetime.now(UTC),
            )
        )
        if turn is None:
            raise SelfTestError("append and search a turn: the store did not keep the turn")
        await _bounded(familiar.history.catch_up(), "index the turn")
        hits = await _bounded(familiar.search_turns("harbour seals"), "search the turn")
        if [hit.turn_id for hit in hits] != [turn.id]:
            raise SelfTestError(f"append and search a turn: searching found {[h.turn_id for h in hits]}")
    return "store and search"


async def _check_embedding(familiar: Familiar) -> str:
    with _step("embed with the offline model"):
        embedder = familiar.embedder
        if embedder is None:
            raise SelfTestError("embed with the offline model: no embedding backend was configured")
        loop = asyncio.get_running_loop()
        vectors = await _bounded(loop.run_in_executor(None, embedder.embed, list(_SENTENCES)), "embed")
        if any(len(vector) != embedder.dim for vector in vectors):
            raise SelfTestError(f"embed with the offline model: vectors are not {embedder.dim} long")
        cat, kitten, taxes = vectors
        similar, unrelated = _cosine(cat, kitten), _cosine(cat, taxes)
        if not similar > unrelated + 0.2:
            raise SelfTestError(
                f"embed with the offline model: a paraphrase scored {similar:.2f},"
                f" an unrelated sentence {unrelated:.2f}"
            )
    return f"offline embedding ({embedder.dim} dimensions)"


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)) or 1.0)


async def _settle(window: MainWindow) -> None:
    """Let the handlers a pane starts when shown (loading its data) finish, within a bound."""
    from app.ui.async_slot import running_slots

    deadline = time.monotonic() + SETTLE_SECONDS
    while (pending := running_slots()) and time.monotonic() < deadline:
        await asyncio.wait(pending, timeout=deadline - time.monotonic())  # a handler may start another
    if running_slots():
        raise SelfTestError(f"render the panes: {window.windowTitle()} kept loading for {SETTLE_SECONDS:.0f} s")


def _drew_something(image: QImage) -> bool:
    """More than one colour across the pane (a grid of samples): text, controls, not a bare background."""
    if image.isNull():
        return False
    step = 4
    colours = {image.pixel(x, y) for y in range(0, image.height(), step) for x in range(0, image.width(), step)}
    return len(colours) > 1


async def _check_window(familiar: Familiar) -> str:
    from app.ui.main_window import MainWindow

    with _step("render the panes"):
        window = MainWindow(familiar)
        try:
            window.show()
            rendered = []
            for pane in window.panes:
                title = pane.title
                window.show_pane(pane.name)
                await _settle(window)
                if not pane.isVisible():
                    raise SelfTestError(f"render the panes: {title} is not shown when chosen")
                if not _drew_something(pane.grab().toImage()):
                    raise SelfTestError(f"render the panes: {title} drew nothing")
                rendered.append(title)
        finally:
            window.close()
            await window.shutdown()
            window.deleteLater()
    return f"{len(rendered)} panes rendered ({', '.join(rendered)})"


async def _checks(root: Path) -> list[str]:
    paths = FamiliarPaths(root=root, name="self-test")
    with _step("create a familiar"):
        ensure_familiar(paths)
        set_values(paths.character_toml, {"providers.embedding.backend": "fastembed"})
        secrets = SecretStore(paths.name, paths.secrets_file, use_keyring=False)
        familiar = await _bounded(Familiar.open(paths, secrets, env={}), "open the familiar")
    try:
        return [await _check_store(familiar), await _check_embedding(familiar), await _check_window(familiar)]
    finally:
        await familiar.close()


def run_self_test() -> int:
    """The `--self-test` command: 0 and one line when everything works, else 1 and one line on stderr."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before Qt starts: the self-test runs anywhere, display or not
    os.environ.setdefault("QT_API", "pyside6")  # qasync picks its binding from this
    import qasync
    from PySide6.QtWidgets import QApplication

    from app.ui.icons import app_icon

    started = time.perf_counter()
    app = QApplication.instance() or QApplication([sys.argv[0]])
    assert isinstance(app, QApplication)
    app.setWindowIcon(app_icon())
    app.setQuitOnLastWindowClosed(False)  # closing the window must not stop the loop before the store closes
    results: list[str] = []
    failure: list[str] = []

    async def main() -> None:
        with tempfile.TemporaryDirectory(prefix="familiar-self-test-", ignore_cleanup_errors=True) as scratch:
            try:
                results.extend(await _checks(Path(scratch)))
            except SelfTestError as exc:
                failure.append(str(exc))

    qasync.run(main())
    if failure:
        error(f"self-test failed at {failure[0]}")
        return 1
    output(f"self-test passed in {time.perf_counter() - started:.1f} s: {'; '.join(results)}")
    return 0
