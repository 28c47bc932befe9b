"""The pane base: title, navigation name, loading / empty / error states, staleness, operations.

How to add a pane
=================
1. Write `app/ui/panes/<name>.py` with one `Pane` subclass::

       class PeoplePane(Pane):
           name = "people"                      # `familiar --pane people`, `familiar screenshot --pane people`
           title = "People"                     # navigation entry and heading
           watches = frozenset({ChangeKind.FACTS, ChangeKind.DOSSIERS})   # what makes it stale
           empty_text = "Nobody yet. People appear here once they talk where the familiar can read."

           def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
               super().__init__(context, parent)
               self.model = PeopleModel(self)   # a RecordTableModel (app/ui/models/base.py)
               view = PlaceholderTableView()    # app/ui/widgets/placeholder_table.py
               view.setModel(self.model)
               self.set_body(view)              # what shows once loaded with content

           async def load(self) -> bool:       # fetch through the facade, fill the models
               people = await self.facade.memory.people()
               self.model.set_records(people)
               return bool(people)              # False shows `empty_text`

   - Read and write only through `self.facade` (the typed sub-APIs: `memory`, `controls`, `indexes`,
     `explain`); they return view records with names resolved. Never touch app.memory.
   - Run every facade call from a slot through `self.ops.run(...)` (busy state, the pane's error
     banner, no copied try/except) or `self.ops.run_with_progress(...)` for long work.
   - A state-changing action goes through `self.context.undo.perform(...)` with an action from
     app/ui/fact_actions.py (Ctrl+Z and the Undo notice then work) and `initiator=self`, so the change
     it publishes does not make this pane reload what it just updated itself.
   - `load()` raising FamiliarError shows the error state with its message and "Try again"; any other
     exception is logged and shown the same way. While the first load runs the loading state shows.
2. Add the class to `PANES` in app/ui/main_window.py (one line). The registry is the only list of
   names: the navigation, `--pane` and `screenshot --pane` read it.
3. Test it on the real runtime (tests/ui/conftest.py `real_familiar`): drive it by keys and clicks,
   `qtmodeltester` on each model, and `familiar screenshot --pane <name>` (look at the PNG).
import-linter keeps panes independent of each other and models free of panes and dialogs: shared
widgets go to app/ui/widgets/, shared models to app/ui/models/.

Recipes
-------
- Records: app/runtime/api/views.py (FactView, PendingItem, FactDetail, TimelineSlice, ForgetPreview,
  TombstoneView, PauseView, IndexStatusView, Explanation...). People and places are `PersonRef` /
  `PlaceRef`: show `.name`, act with `.key`.
- A stale revision: the action's outcome is `Failed` with a `StaleRevisionError` carrying the fact as
  it is now; show that version instead of an error::

      outcome = await self.ops.run("accept the fact", lambda: self.context.undo.perform(step))
      if isinstance(outcome, Failed) and isinstance(outcome.error, StaleRevisionError):
          self.show_new_version(outcome.error.current)

- Long work with progress and Cancel (the dialog appears only after half a second)::

      await self.ops.run_with_progress(
          "rebuild the indexes", lambda report: self.facade.indexes.rebuild(report),
          label="Rebuilding the indexes", blocking=True,
      )

- A forget: `fact_actions.forget(memory, fact, initiator=self)` through `undo.perform`; its preview
  first with `memory.forget_preview(fact.id)`. The fact leaves every read at once and is erased when
  its Undo notice goes (FORGET_UNDO_SECONDS) or when the window closes.
- Unsaved work (an editor's draft): override `unsaved_work()` to say what closing would lose; the window
  asks before it closes and shows the pane.
- Tests: tests/ui/conftest.py gives `real_familiar` (the runtime over a tmp store) and
  `memory_facade` (the scripted fake over it); tests/ui/support.py `make_context` builds one pane
  alone. Stall scenarios (a slider drag, keyboard triage) go in bench/bench_ui_stall.py SCENARIOS.

Staleness: on a MemoryChanged touching `watches` that this pane did not initiate, a visible pane
reloads at once and a hidden one marks itself stale and reloads when shown. `loaded` is emitted each
time a load settles (content, empty or error); `is_loaded` says one has.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QApplication, QLabel, QPushButton, QStackedWidget, QVBoxLayout, QWidget
from shiboken6 import isValid

from app.runtime.api.facade import FamiliarFacade
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind, MemoryChanged
from app.ui.async_slot import async_slot
from app.ui.bridge import RuntimeBridge
from app.ui.error_text import one_line
from app.ui.ops import Operations
from app.ui.progress import StatusProgress
from app.ui.theme import PANE_MARGINS, SPACE_M, muted_style, title_label
from app.ui.undo import UndoCentre
from app.ui.widgets.error_banner import ErrorBanner

_log = logging.getLogger(__name__)

LOADING_TEXT = "Loading…"


class PaneState(enum.Enum):
    LOADING = "loading"
    READY = "ready"
    EMPTY = "empty"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class PaneContext:
    """What every pane is given by the window."""

    facade: FamiliarFacade
    bridge: RuntimeBridge
    undo: UndoCentre
    status: StatusProgress  # background progress in the status bar
    window: QWidget  # the parent for dialogs
    panes: frozenset[str] = frozenset()  # the names of the window's panes (where `navigate_requested` can go)


class _StateMessage(QWidget):
    """A centred message with an optional button: the loading, empty and error states."""

    def __init__(self, button_text: str | None = None) -> None:
        super().__init__()
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setStyleSheet(muted_style())
        self.button = QPushButton(button_text or "")
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addWidget(self.label)
        layout.addWidget(self.button, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addStretch(2)
        # Only once it has a parent: a parentless widget made visible is a window of its own, which would
        # flash up and take the focus from the window when a pane is built after the window is shown.
        self.button.setVisible(button_text is not None)


class Pane(QWidget):
    name: ClassVar[str]
    title: ClassVar[str]
    watches: ClassVar[frozenset[ChangeKind]] = frozenset()
    # Files this pane edits (ChangeKind.LOREBOOK_FILE...): a change on disk calls `disk_changed()` (at once
    # while the pane shows, else when it is shown next) instead of a reload: unsaved edits are the pane's.
    disk_watches: ClassVar[frozenset[ChangeKind]] = frozenset()
    empty_text: ClassVar[str] = "Nothing here yet."

    loaded = Signal()
    navigate_requested = Signal(str, object)
    """(pane name, target): ask the window to show another pane on something (e.g. a fact id); the
    window calls that pane's `focus_on(target)`."""

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.context = context
        self.facade = context.facade
        self.error_banner = ErrorBanner()
        self.ops = Operations(
            show_error=self.error_banner.show_message,
            clear_error=self.error_banner.clear_message,
            status=context.status,
            dialog_parent=context.window,
            parent=self,
        )
        self._loading_page = _StateMessage()
        self._loading_page.label.setText(LOADING_TEXT)
        self._empty_page = _StateMessage()
        self._empty_page.label.setText(self.empty_text)
        self._error_page = _StateMessage("Try again")
        self._error_page.button.clicked.connect(self.refresh)
        self._body: QWidget = QWidget()
        self._pages = QStackedWidget()
        for page in (self._body, self._loading_page, self._empty_page, self._error_page):
            self._pages.addWidget(page)

        self.heading = title_label(self.title)
        self.page_layout = QVBoxLayout(self)
        self.page_layout.setContentsMargins(*PANE_MARGINS)
        self.page_layout.setSpacing(SPACE_M)
        self.page_layout.addWidget(self.heading)
        self.page_layout.addWidget(self.error_banner)
        self.page_layout.addWidget(self._pages, 1)

        self._state = PaneState.LOADING
        self._pages.setCurrentWidget(self._loading_page)
        self._stale = True
        self._disk_pending = False
        self._ever_loaded = False
        self._load_task: asyncio.Task[None] | None = None
        self._again = False
        # take_focus() asked while the first load ran: the widget that had the focus then (it goes on from there)
        self._focus_when_loaded: tuple[QWidget | None] | None = None
        context.bridge.memory_changed.connect(self._on_bridge_memory_changed)

    # -- for subclasses -----------------------------------------------------------------------------
    def set_body(self, widget: QWidget) -> None:
        """The pane's content, shown once loaded with something to show."""
        self._pages.removeWidget(self._body)
        self._body.deleteLater()
        self._body = widget
        self._pages.insertWidget(0, widget)
        if self._state is PaneState.READY:
            self._pages.setCurrentWidget(widget)

    async def load(self) -> bool:
        """Fetch through the facade and fill the models; return whether there is anything to show."""
        return True

    def focus_on(self, _target: object) -> None:
        """Show a target another pane asked this one to show (see `navigate_requested`); by default nothing."""

    def focus_widget(self) -> QWidget | None:
        """Where the keyboard goes when the owner opens this pane from the navigation (a click, or Enter):
        its main view. By default the first widget the Tab key reaches in it; None when it has none."""
        widget = self.nextInFocusChain()
        while widget is not None and widget is not self and self.isAncestorOf(widget):
            if (
                widget.isVisible()
                and widget.isEnabled()
                and widget.focusPolicy() & Qt.FocusPolicy.TabFocus == Qt.FocusPolicy.TabFocus
            ):
                return widget
            widget = widget.nextInFocusChain()
        return None

    def take_focus(self) -> None:
        """Put the keyboard in this pane (`focus_widget`), now or, while the pane still loads, once it has
        loaded, unless the focus has moved on meanwhile."""
        self._focus_when_loaded = None
        if self.state is not PaneState.LOADING or self.is_loaded:
            target = self.focus_widget()
            if target is None or not (target.isVisible() and target.isEnabled()):
                target = Pane.focus_widget(self)  # its main view is not showing (an empty or error state)
            (target or self).setFocus(Qt.FocusReason.OtherFocusReason)
            return
        self._focus_when_loaded = (QApplication.focusWidget(),)

    def unsaved_work(self) -> str | None:
        """What closing the window now would lose, in a sentence (None: nothing). The window asks first."""
        return None

    def set_empty_action(self, text: str, slot: Callable[[], object]) -> None:
        """A button under the empty state's text (e.g. "Open Settings…")."""
        self._empty_page.button.setText(text)
        self._empty_page.button.setVisible(True)
        self._empty_page.button.clicked.connect(slot)

    # -- state -----------------------------------------------------------------------------------------
    @property
    def state(self) -> PaneState:
        return self._state

    @property
    def is_loaded(self) -> bool:
        """A load has settled (content, empty or error) and none is running now."""
        return self._ever_loaded and self._load_task is None

    @property
    def is_stale(self) -> bool:
        return self._stale

    def state_text(self) -> str:
        """What the state page says now ("" while the body shows)."""
        page = self._pages.currentWidget()
        return page.label.text() if isinstance(page, _StateMessage) else ""

    def mark_stale(self) -> None:
        """What this pane shows may be out of date: reload now if visible, else when next shown."""
        self._stale = True
        if self.isVisible():
            self.refresh()

    def refresh(self) -> None:
        """(Re)load; a refresh asked for while one runs makes it run once more after."""
        self._stale = False
        if self._load_task is not None:
            self._again = True
            return
        self._load_task = self._run_loads()

    @async_slot()
    async def _run_loads(self) -> None:
        try:
            while True:
                self._again = False
                await self._load_once()
                if not self._again:
                    break
        finally:
            # A pane deleted while it loaded (its window closed; the load cancelled) has no signal left.
            if isValid(self):
                self._load_task = None
                self._ever_loaded = True
                waiting, self._focus_when_loaded = self._focus_when_loaded, None
                if waiting is not None and QApplication.focusWidget() is waiting[0] and self.isVisible():
                    self.take_focus()
                self.loaded.emit()

    async def _load_once(self) -> None:
        if not self._ever_loaded:
            self._show(PaneState.LOADING, self._loading_page)
        try:
            has_content = await self.load()
        except FamiliarError as error:
            self._show_error(one_line(error))
        except Exception as error:  # noqa: BLE001 (a bug must not take the window down; logged with its traceback)
            if not isValid(self):  # the window closed while it loaded: nothing is left to show it in
                return
            _log.exception("loading the %s pane failed unexpectedly", self.name)
            self._show_error(f"Could not load {self.title}: {one_line(error)}")
        else:
            if has_content:
                self._show(PaneState.READY, self._body)
            else:
                self._empty_page.label.setText(self.empty_text)
                self._show(PaneState.EMPTY, self._empty_page)

    def _show_error(self, message: str) -> None:
        self._error_page.label.setText(f"{message}\nCheck the message above, then try again.")
        self._show(PaneState.ERROR, self._error_page)

    def _show(self, state: PaneState, page: QWidget) -> None:
        self._state = state
        self._pages.setCurrentWidget(page)

    # -- Qt and the bridge ---------------------------------------------------------------------------
    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._stale:
            self.refresh()
        if self._disk_pending:
            self._disk_pending = False
            self.disk_changed()

    def disk_changed(self) -> None:
        """A file in `disk_watches` changed on disk (this pane's own save too): look at it again."""

    def _on_bridge_memory_changed(self, change: MemoryChanged) -> None:
        if change.kinds & self.disk_watches:
            if self.isVisible():
                self.disk_changed()
            else:
                self._disk_pending = True
        if change.initiator is self or not (change.kinds & self.watches):
            return
        self.mark_stale()
