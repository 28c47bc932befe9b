"""The lorebook's book-wide fields (its name, scan depth, matching, budget, recursion), as a dialog."""

from __future__ import annotations

import dataclasses

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.views import LoreBookSettings


class BookSettingsDialog(QDialog):
    """The book-wide fields of lorebook.toml."""

    def __init__(self, settings: LoreBookSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Book settings")
        self._base = settings
        self.name = QLineEdit(settings.name)
        self.scan_depth = QSpinBox()
        self.scan_depth.setRange(0, 1000)
        self.scan_depth.setValue(settings.scan_depth)
        self.scan_depth.setToolTip("How many recent messages are scanned for keys")
        self.case_sensitive = QCheckBox("Keys match only with the same case")
        self.case_sensitive.setChecked(settings.case_sensitive)
        self.whole_words = QCheckBox("Keys match whole words only")
        self.whole_words.setChecked(settings.whole_words)
        self.token_budget = QSpinBox()
        self.token_budget.setRange(0, 1_000_000)
        self.token_budget.setSpecialValueText("the reply budget's")
        self.token_budget.setValue(settings.token_budget or 0)
        self.max_entries = QSpinBox()
        self.max_entries.setRange(0, 10_000)
        self.max_entries.setSpecialValueText("the reply budget's")
        self.max_entries.setValue(settings.max_entries or 0)
        self.recursive = QCheckBox("Entries can activate other entries")
        self.recursive.setChecked(settings.recursive_scanning)
        self.recursion_steps = QSpinBox()
        self.recursion_steps.setRange(0, 100)
        self.recursion_steps.setValue(settings.max_recursion_steps)
        self.group_scoring = QCheckBox("Inclusion groups pick by how many keys matched")
        self.group_scoring.setChecked(settings.use_group_scoring)
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("Scan depth", self.scan_depth)
        form.addRow("", self.case_sensitive)
        form.addRow("", self.whole_words)
        form.addRow("Token budget", self.token_budget)
        form.addRow("Most entries", self.max_entries)
        form.addRow("", self.recursive)
        form.addRow("Recursion steps", self.recursion_steps)
        form.addRow("", self.group_scoring)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)

    def settings(self) -> LoreBookSettings:
        return dataclasses.replace(
            self._base,
            name=self.name.text().strip(),
            scan_depth=self.scan_depth.value(),
            case_sensitive=self.case_sensitive.isChecked(),
            whole_words=self.whole_words.isChecked(),
            token_budget=self.token_budget.value() or None,
            max_entries=self.max_entries.value() or None,
            recursive_scanning=self.recursive.isChecked(),
            max_recursion_steps=self.recursion_steps.value(),
            use_group_scoring=self.group_scoring.isChecked(),
        )
