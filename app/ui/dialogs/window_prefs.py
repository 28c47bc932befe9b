"""The window's own preferences, as a section of Settings: theme, the tray, notifications.

They apply at once (no Save needed) and are kept in ui.toml in the data root, for every familiar
(app/config/ui_prefs.py), not in character.toml.
"""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QGroupBox, QWidget

from app.config.ui_prefs import UiPreferencesFile
from app.ui.theme import SPACE_M, THEME_CHOICES, THEME_WORDS, ThemeChoice, ThemeController, small_label


class WindowPreferencesBox(QGroupBox):
    def __init__(
        self,
        prefs: UiPreferencesFile,
        theme: ThemeController | None,
        *,
        tray_available: bool,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__("Window", parent)
        self._prefs = prefs
        self._theme = theme
        current = prefs.prefs

        self.theme_choice = QComboBox()
        for choice in THEME_CHOICES:
            self.theme_choice.addItem(THEME_WORDS[choice], choice)
        self.theme_choice.setCurrentIndex(THEME_CHOICES.index(_choice(current.theme)))
        self.theme_choice.currentIndexChanged.connect(self._on_theme_chosen)

        self.close_to_tray = QCheckBox("Keep the familiar running in the tray when the window is closed")
        self.close_to_tray.setChecked(current.close_to_tray)
        self.close_to_tray.setEnabled(tray_available)
        if not tray_available:
            self.close_to_tray.setToolTip("This desktop has no system tray: closing the window quits Familiar.")
        self.close_to_tray.toggled.connect(lambda on: self._prefs.update(close_to_tray=on))

        self.notify_pending = QCheckBox("Tell me when new facts wait in the pending queue")
        self.notify_pending.setChecked(current.notify_pending)
        self.notify_pending.toggled.connect(lambda on: self._prefs.update(notify_pending=on))

        form = QFormLayout(self)
        form.setVerticalSpacing(SPACE_M)
        form.addRow("Theme", self.theme_choice)
        form.addRow(self.close_to_tray)
        form.addRow(self.notify_pending)
        where = prefs.path if prefs.path is not None else "memory only"
        form.addRow(small_label(f"These apply at once, for every familiar, and are kept in {where}."))
        if prefs.problem:
            form.addRow(small_label(prefs.problem))

    def _on_theme_chosen(self, index: int) -> None:
        choice = _choice(str(self.theme_choice.itemData(index)))
        self._prefs.update(theme=choice)
        if self._theme is not None:
            self._theme.apply(choice)


def _choice(value: str) -> ThemeChoice:
    for choice in THEME_CHOICES:
        if choice == value:
            return choice
    return "system"
