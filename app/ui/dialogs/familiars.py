"""File > Open familiar and File > New familiar.

Each familiar runs in its own process with its own window (one per familiar: app/ui/single_instance.py), so
opening another one launches `familiar --familiar NAME` beside this one: this window and its store stay as
they are, and a familiar that is already open just comes forward. A new familiar is made from the template
or from a character card (PNG or JSON, V2 or V3) off the UI thread, then opened the same way.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QProcess, Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from app.config.errors import ConfigError
from app.config.paths import FamiliarExistsError, check_name, create_familiar, familiar_paths, list_familiars
from app.runtime.errors import FamiliarError
from app.ui.async_slot import async_slot
from app.ui.dialogs.modal import choose_file_to_open
from app.ui.ops import Operations, Succeeded
from app.ui.theme import DIALOG_MARGINS, SPACE_M, colours, small_label, text_colour_style, title_label

_log = logging.getLogger(__name__)

Launcher = Callable[[str], bool]
CARD_FILTER = "Character cards (*.png *.json);;All files (*)"


def familiar_command(name: str) -> tuple[str, list[str]]:
    """The program and arguments that open the window of the familiar `name` (the bundle, or this Python)."""
    if getattr(sys, "frozen", False):  # the PyInstaller bundle: its executable is `familiar`
        return sys.executable, ["--familiar", name]
    return sys.executable, ["-m", "app", "--familiar", name]


def launch_familiar(name: str) -> bool:
    """Open the familiar `name` in a process of its own (its window comes forward if it is open already)."""
    program, arguments = familiar_command(name)
    started, _pid = QProcess.startDetached(program, arguments)
    if not started:
        _log.warning("could not start %s %s", program, " ".join(arguments))
    return bool(started)


class OpenFamiliarDialog(QDialog):
    """Lists the familiars of this data folder; Open launches the chosen one."""

    def __init__(self, root: Path, current: str, launcher: Launcher, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._launcher = launcher
        self.setWindowTitle("Open familiar")
        self.setMinimumWidth(380)
        self.familiars = QListWidget()
        for name in list_familiars(root):
            self.familiars.addItem(name)
            if name == current:
                item = self.familiars.item(self.familiars.count() - 1)
                item.setText(f"{name} (this window)")
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
        self.familiars.itemDoubleClicked.connect(lambda _item: self._on_open())
        self.error_label = _error_label()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self._on_open)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(*DIALOG_MARGINS)
        layout.setSpacing(SPACE_M)
        layout.addWidget(title_label("Open familiar"))
        layout.addWidget(small_label(f"Each familiar opens in a window of its own. Familiars in {root / 'familiars'}:"))
        layout.addWidget(self.familiars, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        for row in range(self.familiars.count()):
            if self.familiars.item(row).flags() & Qt.ItemFlag.ItemIsEnabled:
                self.familiars.setCurrentRow(row)
                break

    def chosen(self) -> str | None:
        item = self.familiars.currentItem()
        if item is None or not item.flags() & Qt.ItemFlag.ItemIsEnabled:
            return None
        return item.text()

    def _on_open(self) -> None:
        name = self.chosen()
        if name is None:
            _show(self.error_label, "Choose a familiar first (File > New familiar makes one).")
            return
        if not self._launcher(name):
            _show(self.error_label, f"Could not start Familiar for '{name}'; see the log file.")
            return
        self.accept()


class NewFamiliarDialog(QDialog):
    """A name, and the template or a character card; Create makes it (off the UI thread) and opens it."""

    def __init__(self, root: Path, launcher: Launcher, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._root = root
        self._launcher = launcher
        self.created: str | None = None
        self.ops = Operations(show_error=self._show_error, parent=self)
        self.setWindowTitle("New familiar")
        self.setMinimumWidth(480)

        self.name = QLineEdit()
        self.name.setPlaceholderText("letters, digits, - and _ (from the card's name if empty)")
        self.from_template = QRadioButton("From the template (a friendly wisp to rename and rewrite)")
        self.from_card = QRadioButton("From a character card (PNG or JSON, V2 or V3)")
        self.from_template.setChecked(True)
        self._kind = QButtonGroup(self)
        self._kind.addButton(self.from_template)
        self._kind.addButton(self.from_card)
        self.card_file = QLineEdit()
        self.card_file.setPlaceholderText("the card file")
        self.browse_button = QPushButton("Browse…")
        self.browse_button.clicked.connect(self._on_browse)
        card_row = QHBoxLayout()
        card_row.addWidget(self.card_file, 1)
        card_row.addWidget(self.browse_button)
        self.from_card.toggled.connect(self._on_kind_changed)
        self.error_label = _error_label()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.create_button = self.buttons.addButton("Create and open", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self._on_create)
        self.buttons.rejected.connect(self.reject)

        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow(self.from_template)
        form.addRow(self.from_card)
        form.addRow("Card", card_row)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(*DIALOG_MARGINS)
        layout.setSpacing(SPACE_M)
        layout.addWidget(title_label("New familiar"))
        layout.addLayout(form)
        layout.addWidget(self.error_label)
        layout.addStretch(1)
        layout.addWidget(self.buttons)
        self._on_kind_changed(False)

    def _on_kind_changed(self, card: bool) -> None:
        self.card_file.setEnabled(card)
        self.browse_button.setEnabled(card)

    @async_slot()
    async def _on_browse(self) -> None:
        chosen = await choose_file_to_open(self, "Choose a character card", CARD_FILTER)
        if chosen is not None:
            self.card_file.setText(str(chosen))

    def _show_error(self, message: str) -> None:
        _show(self.error_label, message)

    @async_slot()
    async def _on_create(self) -> None:
        self.error_label.setVisible(False)
        name = self.name.text().strip() or None
        card = self.card_file.text().strip() if self.from_card.isChecked() else None
        outcome = await self.ops.run(
            "create the familiar",
            lambda: asyncio.to_thread(_create, self._root, name, Path(card) if card else None, card is not None),
            busy=[self.create_button],
        )
        if not isinstance(outcome, Succeeded):
            return
        self.created = outcome.value
        if not self._launcher(outcome.value):
            self._show_error(f"'{outcome.value}' was created, but Familiar could not be started for it.")
            return
        self.accept()


def _create(root: Path, name: str | None, card: Path | None, from_card: bool) -> str:
    """Make the familiar (blocking file I/O: on a worker thread); returns its name. One-line errors."""
    try:
        if not from_card:
            if name is None:
                raise FamiliarError("Give the new familiar a name.")
            check_name(name)
            create_familiar(familiar_paths(name, {"FAMILIAR_HOME": str(root)}))
            return name
        if card is None:
            raise FamiliarError("Choose the character card file.")
        from app.runtime.cards import create_familiar_from_card  # the card reader loads on first use

        return create_familiar_from_card(card, root, name).name
    except FamiliarExistsError as exc:
        raise FamiliarError(f"{exc}; choose another name") from None
    except ConfigError as exc:
        raise FamiliarError(str(exc)) from None
    except OSError as exc:
        raise FamiliarError(f"Cannot create the familiar under {root}: {exc.strerror or exc}") from None


def _error_label() -> QLabel:
    label = QLabel()
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setVisible(False)
    return label


def _show(label: QLabel, message: str) -> None:
    label.setStyleSheet(text_colour_style(colours().error))
    label.setText(message)
    label.setVisible(True)
