"""The window's own preferences, as a section of Settings: theme, the tray, notifications.

They apply at once, as a preview (no Save needed to see them), and are kept in ui.toml in the data root, for
every familiar (app/config/ui_prefs.py), not in character.toml. Cancel (or closing Settings) puts back what
was in force when Settings opened (`restore`, which the window connects to the dialog's `rejected`).
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
        # What Cancel puts back: the theme in force (the controller's, which the file should match) and the rest.
        self._theme_before: ThemeChoice = theme.choice if theme is not None else _choice(current.theme)
        self._before = current

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
        form.addRow(
            small_label(f"These apply at once (Cancel puts them back), for every familiar, and are kept in {where}.")
        )
        if prefs.problem:
            form.addRow(small_label(prefs.problem))

    def _on_theme_chosen(self, index: int) -> None:
        choice = _choice(str(self.theme_choice.itemData(index)))
        self._prefs.update(theme=choice)
        if self._theme is not None:
            self._theme.apply(choice)

    def restore(self) -> None:
        """Put back the theme and the choices in force when this section was built (Settings' Cancel)."""
        before, now = self._before, self._prefs.prefs
        changes: dict[str, object] = {
            key: getattr(before, key)
            for key in ("close_to_tray", "notify_pending")
            if getattr(now, key) != getattr(before, key)
        }
        if now.theme != self._theme_before:
            changes["theme"] = self._theme_before
        if changes:
            self._prefs.update(**changes)
        if self._theme is not None and self._theme.choice != self._theme_before:
            self._theme.apply(self._theme_before)


def _choice(value: str) -> ThemeChoice:
    for choice in THEME_CHOICES:
        if choice == value:
            return choice
    return "system"
