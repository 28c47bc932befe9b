"""Forget a fact by click, from any pane that shows one: a preview of what goes, then the deferred forget.

    decision = await ask_to_forget(context.facade.memory, fact, context.window)
    if decision is not None:
        step = fact_actions.forget(memory, fact, redact_sources=decision.redact_sources, initiator=self)
        await self.ops.run("forget the fact", lambda: context.undo.perform(step))

or simply `await forget_with_preview(memory, undo, ops, fact, parent, initiator=self)`, which does both.
The preview counts, now and without writing, every store the forget erases from (its versions, the
search index, vectors, the dossiers, reflections and summaries that may quote it and, when the owner
ticks the box, the messages it came from and the familiar's replies quoting them). The forget itself
is the undoable, deferred one of app/ui/fact_actions.py: out of every read at once, erased when its
Undo notice goes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.facade import MemoryApi
from app.runtime.api.views import FORGET_UNDO_SECONDS, FactView, ForgetPreview, StoreCount
from app.ui import fact_actions
from app.ui.async_slot import async_slot
from app.ui.ops import Operations, Succeeded
from app.ui.theme import small_label, title_label
from app.ui.undo import UndoCentre
from app.ui.widgets.error_banner import ErrorBanner

# What each store of a receipt or preview is, in the owner's words.
STORE_WORDS = {
    "facts": ("version of the fact", "versions of the fact"),
    "fts/facts": ("entry in the facts search index", "entries in the facts search index"),
    "fact_embeddings": ("meaning vector", "meaning vectors"),
    "people_dossiers": ("dossier (rebuilt without it)", "dossiers (rebuilt without it)"),
    "reflections": ("reflection that may quote it", "reflections that may quote it"),
    "summaries": ("conversation summary that may quote it", "conversation summaries that may quote it"),
    "turns": ("message it came from (text erased)", "messages it came from (text erased)"),
    "turns (replies quoting them)": (
        "reply of the familiar quoting them (text erased)",
        "replies of the familiar quoting them (text erased)",
    ),
    "fts/turns": ("entry in the messages search index", "entries in the messages search index"),
}


def store_line(count: StoreCount) -> str:
    """ "2 versions of the fact", "1 meaning vector"; an unknown store by its own name."""
    one, many = STORE_WORDS.get(count.store, (count.store, count.store))
    return f"{count.count} {one if count.count == 1 else many}"


@dataclass(frozen=True, slots=True)
class ForgetDecision:
    redact_sources: bool


class ForgetDialog(QDialog):
    """Shows what forgetting `fact` erases; `decision` is set when the owner presses Forget."""

    def __init__(self, memory: MemoryApi, fact: FactView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._memory = memory
        self._fact = fact
        self.preview: ForgetPreview | None = None
        self.decision: ForgetDecision | None = None
        self.setWindowTitle("Forget a fact")
        self.setMinimumWidth(520)
        self.banner = ErrorBanner()
        self.ops = Operations(show_error=self.banner.show_message, clear_error=self.banner.clear_message, parent=self)

        heading = title_label("Forget this fact?")
        quoted = QLabel(fact_actions.quoted(fact.content))
        quoted.setWordWrap(True)
        quoted.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        explain = small_label(
            "It is erased everywhere the familiar keeps it, and only a tombstone without its words stays, so it "
            f"is not learned again. You can undo for {FORGET_UNDO_SECONDS:g} seconds after pressing Forget."
        )
        explain.setWordWrap(True)
        self.redact = QCheckBox("Also erase the messages it came from")
        self.redact.setEnabled(bool(fact.source_turn_ids))
        self.redact.toggled.connect(self._on_redact_toggled)
        self.goes = QListWidget()
        self.goes.setObjectName("forget-preview")
        self.goes.setMinimumHeight(150)
        self.goes.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.forget_button = QPushButton("Forget")
        self.forget_button.setEnabled(False)
        self.buttons.addButton(self.forget_button, QDialogButtonBox.ButtonRole.DestructiveRole)
        self.forget_button.clicked.connect(self._on_forget_clicked)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addWidget(quoted)
        layout.addWidget(explain)
        layout.addWidget(self.banner)
        layout.addWidget(QLabel("What will go:"))
        layout.addWidget(self.goes, 1)
        layout.addWidget(self.redact)
        layout.addWidget(self.buttons)
        self.buttons.button(QDialogButtonBox.StandardButton.Cancel).setFocus()

    @async_slot()
    async def load(self) -> None:
        """Count what goes now (again after the box is ticked or cleared)."""
        self.forget_button.setEnabled(False)
        redact = self.redact.isChecked()
        outcome = await self.ops.run(
            "count what the forget erases",
            lambda: self._memory.forget_preview(self._fact.id, redact_sources=redact),
            busy=[self.redact],
        )
        if not isinstance(outcome, Succeeded):
            return
        preview: ForgetPreview = outcome.value
        self.preview = preview
        self.goes.clear()
        for count in preview.stores:
            if count.count:
                self.goes.addItem(store_line(count))
        if preview.redact_sources:
            for source in preview.sources:
                when = source.created_at.astimezone().strftime("%d %b %Y %H:%M")
                text = " ".join(source.content.split()) or "(already erased)"
                self.goes.addItem(f"  message by {source.author.name} in {source.place.name}, {when}: {text}")
        sources = len(preview.sources)
        self.redact.setText(
            f"Also erase the {sources} message{'s' if sources != 1 else ''} it came from,"
            " and the familiar's replies quoting them"
            if sources
            else "Also erase the messages it came from (it came from none)"
        )
        self.redact.setEnabled(bool(sources))
        self.forget_button.setEnabled(True)

    def _on_redact_toggled(self, _checked: bool) -> None:
        self.load()

    def _on_forget_clicked(self) -> None:
        self.decision = ForgetDecision(redact_sources=self.redact.isChecked())
        self.accept()


async def ask_to_forget(memory: MemoryApi, fact: FactView, parent: QWidget | None) -> ForgetDecision | None:
    """Show the preview dialog (window-modal, without a nested event loop); the owner's decision, or
    None when they cancel or close it."""
    dialog = ForgetDialog(memory, fact, parent)
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def finished(_result: int) -> None:
        if not done.done():
            done.set_result(None)

    dialog.finished.connect(finished)
    dialog.open()
    loading = dialog.load()
    try:
        await done
    finally:
        loading.cancel()  # closed while still counting: nothing is left to show it in
        await asyncio.gather(loading, return_exceptions=True)
        dialog.deleteLater()
    return dialog.decision


async def forget_with_preview(
    memory: MemoryApi,
    undo: UndoCentre,
    ops: Operations,
    fact: FactView,
    parent: QWidget | None,
    *,
    initiator: object | None = None,
) -> bool:
    """Ask with the preview, then forget through the undo centre (deferred, with its Undo notice).
    Returns whether the forget was scheduled."""
    decision = await ask_to_forget(memory, fact, parent)
    if decision is None:
        return False
    step = fact_actions.forget(memory, fact, redact_sources=decision.redact_sources, initiator=initiator)
    outcome = await ops.run("forget the fact", lambda: undo.perform(step))
    return isinstance(outcome, Succeeded)
