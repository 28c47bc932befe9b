"""The side editor of one lorebook entry: every field the engine acts on.

Keys and secondary keys are chips checked as you type (app/ui/widgets/key_chips.py); the content shows
its cost in tokens as you type. Changes are gathered for a moment (EDIT_SETTLE_MS) and then emitted as one
`edited(before, after)` (LoreEntryView each): typing a sentence is one undo step, not one per letter.
`flush()` emits what is pending at once (before a save, or when another entry is chosen).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.views import LoreEntryView, LoreLogic
from app.ui.theme import section_label, small_label
from app.ui.widgets.key_chips import KeyChips

EDIT_SETTLE_MS = 400
LOGICS: tuple[tuple[LoreLogic, str], ...] = (
    ("and_any", "AND any secondary key"),
    ("and_all", "AND all secondary keys"),
    ("not_any", "NOT any secondary key"),
    ("not_all", "NOT all secondary keys"),
)
"""Each logic as the combo shows it: short enough for the side panel of a small window."""
LOGIC_TIPS: dict[LoreLogic, str] = {
    "and_any": "It fires on a key and any of its secondary keys",
    "and_all": "It fires on a key and every one of its secondary keys",
    "not_any": "It fires on a key and none of its secondary keys",
    "not_all": "It fires on a key unless every one of its secondary keys is there too",
}
TRISTATE: tuple[tuple[bool | None, str], ...] = ((None, "the book's setting"), (True, "yes"), (False, "no"))


def _spin(low: int, high: int, tip: str, special: str | None = None) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setToolTip(tip)
    spin.setKeyboardTracking(False)
    if special is not None:
        spin.setSpecialValueText(special)
    return spin


def _tristate(tip: str) -> QComboBox:
    combo = QComboBox()
    for _value, text in TRISTATE:
        combo.addItem(text)
    combo.setToolTip(tip)
    _narrow(combo)
    return combo


def _narrow(combo: QComboBox) -> None:
    """Long choices must not widen the side panel past a small window."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(12)


class LoreEntryEditor(QWidget):
    edited = Signal(object, object)  # LoreEntryView before, and as the form has it now

    def __init__(
        self, check_key: Callable[[str], str | None], count_tokens: Callable[[str], int], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._count_tokens = count_tokens
        self._entry: LoreEntryView | None = None
        self._loading = False
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(EDIT_SETTLE_MS)
        self._settle.timeout.connect(self.flush)

        self.title = QLineEdit()
        self.title.setPlaceholderText("What this entry is about")
        self.enabled = QCheckBox("Enabled")
        self.enabled.setToolTip("A disabled entry never goes into a reply")
        self.constant = QCheckBox("Constant (in every reply)")
        self.constant.setToolTip("Goes into every reply, whatever is said (within the lorebook's budget)")
        self.keys = KeyChips(check_key, "Add a key: a word, or /regex/i")
        self.logic = QComboBox()
        for logic, text in LOGICS:
            self.logic.addItem(text)
            self.logic.setItemData(self.logic.count() - 1, LOGIC_TIPS[logic], Qt.ItemDataRole.ToolTipRole)
        self.logic.setToolTip("How the secondary keys combine with a primary key that matched")
        self.logic.currentIndexChanged.connect(self._on_logic_changed)
        _narrow(self.logic)
        self.secondary = KeyChips(check_key, "Add a secondary key (optional)")
        self.case = _tristate("Whether the keys match only with the same upper and lower case")
        self.whole = _tristate("Whether a key matches only as a whole word (“cat” not in “concatenate”)")
        self.content = QPlainTextEdit()
        self.content.setPlaceholderText("What the familiar is told when this entry fires")
        self.content.setTabChangesFocus(True)
        self.content.setMinimumHeight(90)
        self.tokens = small_label("0 tokens")
        self.priority = _spin(-100_000, 100_000, "Higher goes first when the budget is tight")
        self.scan_depth = _spin(-1, 1000, "How many recent messages are scanned for the keys", special="the book's")
        self.probability = _spin(0, 100, "The chance it goes in once it matched")
        self.probability.setSuffix(" %")
        self.use_probability = QCheckBox("Use the probability")
        self.group = QLineEdit()
        self.group.setPlaceholderText("Inclusion groups, comma-separated (one entry of a group goes in)")
        self.group_override = QCheckBox("Wins its group (highest priority)")
        self.group_weight = _spin(0, 100_000, "Its chance of being the one of its group to go in")
        self.sticky = _spin(0, 10_000, "Stays in for this many messages after it fired", special="off")
        self.cooldown = _spin(0, 10_000, "Cannot fire for this many messages after it went out", special="off")
        self.delay = _spin(0, 10_000, "Cannot fire before a place has this many messages", special="off")
        self.exclude_recursion = QCheckBox("Not activated by other entries")
        self.prevent_recursion = QCheckBox("Does not activate other entries")
        self.delay_recursion = _spin(0, 100, "Fires only from this recursion level on", special="off")
        self.decorators = QPlainTextEdit()
        self.decorators.setPlaceholderText("@@activate, @@dont_activate, @@depth 4…")
        self.decorators.setToolTip("Character Card V3 decorators, one @@ line each (from an imported card)")
        self.decorators.setTabChangesFocus(True)
        self.decorators.setMaximumHeight(60)

        form = QWidget()
        layout = QVBoxLayout(form)
        layout.setContentsMargins(0, 0, 6, 0)
        self.heading = section_label("No entry chosen")
        layout.addWidget(self.heading)
        top = QFormLayout()
        top.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        top.addRow("&Title", self.title)
        top.addRow("", self.enabled)
        top.addRow("", self.constant)
        top.addRow("&Keys", self.keys)
        top.addRow("Logic", self.logic)
        top.addRow("Secondary", self.secondary)
        top.addRow("Match case", self.case)
        top.addRow("Whole words", self.whole)
        layout.addLayout(top)
        content_label = QLabel("&Content")
        content_label.setBuddy(self.content)
        layout.addWidget(content_label)
        layout.addWidget(self.content, 1)
        layout.addWidget(self.tokens)
        layout.addWidget(section_label("When it goes in"))
        rest = QFormLayout()
        rest.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        rest.addRow("Priority", self.priority)
        rest.addRow("Scan depth", self.scan_depth)
        rest.addRow("Probability", self.probability)
        rest.addRow("", self.use_probability)
        rest.addRow("Group", self.group)
        rest.addRow("", self.group_override)
        rest.addRow("Group weight", self.group_weight)
        rest.addRow("Sticky", self.sticky)
        rest.addRow("Cooldown", self.cooldown)
        rest.addRow("Delay", self.delay)
        rest.addRow("", self.exclude_recursion)
        rest.addRow("", self.prevent_recursion)
        rest.addRow("Recursion delay", self.delay_recursion)
        rest.addRow("Decorators", self.decorators)
        layout.addLayout(rest)
        scroll = QScrollArea()
        scroll.setWidget(form)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

        for line in (self.title, self.group):
            line.textEdited.connect(self._changed)
        self.content.textChanged.connect(self._on_content)
        self.decorators.textChanged.connect(self._changed)
        for box in (
            self.enabled,
            self.constant,
            self.use_probability,
            self.group_override,
            self.exclude_recursion,
            self.prevent_recursion,
        ):
            box.toggled.connect(self._changed)
        for combo in (self.logic, self.case, self.whole):
            combo.currentIndexChanged.connect(self._changed)
        for spin in (
            self.priority,
            self.scan_depth,
            self.probability,
            self.group_weight,
            self.sticky,
            self.cooldown,
            self.delay,
            self.delay_recursion,
        ):
            spin.valueChanged.connect(self._changed)
        self.keys.keys_changed.connect(self._changed)
        self.secondary.keys_changed.connect(self._changed)
        self.set_entry(None)

    # -- showing ---------------------------------------------------------------------------------------
    @property
    def entry(self) -> LoreEntryView | None:
        return self._entry

    def set_entry(self, entry: LoreEntryView | None, heading: str = "") -> None:
        """Show `entry` (None: nothing chosen); what was pending for the one before is dropped, so flush first."""
        self._settle.stop()
        self._entry = entry
        self._loading = True
        try:
            shown = entry or LoreEntryView()
            self.heading.setText(heading or ("No entry chosen: pick one in the table" if entry is None else ""))
            self.title.setText(shown.title)
            self.enabled.setChecked(shown.enabled)
            self.constant.setChecked(shown.constant)
            self.keys.set_keys(shown.keys)
            self.logic.setCurrentIndex([logic for logic, _ in LOGICS].index(shown.logic))
            self.secondary.set_keys(shown.secondary_keys)
            self.case.setCurrentIndex([v for v, _ in TRISTATE].index(shown.case_sensitive))
            self.whole.setCurrentIndex([v for v, _ in TRISTATE].index(shown.whole_words))
            if self.content.toPlainText() != shown.content:
                self.content.setPlainText(shown.content)
            self.priority.setValue(shown.priority)
            self.scan_depth.setValue(-1 if shown.scan_depth is None else shown.scan_depth)
            self.probability.setValue(shown.probability)
            self.use_probability.setChecked(shown.use_probability)
            self.group.setText(shown.group)
            self.group_override.setChecked(shown.group_override)
            self.group_weight.setValue(shown.group_weight)
            self.sticky.setValue(shown.sticky)
            self.cooldown.setValue(shown.cooldown)
            self.delay.setValue(shown.delay)
            self.exclude_recursion.setChecked(shown.exclude_recursion)
            self.prevent_recursion.setChecked(shown.prevent_recursion)
            self.delay_recursion.setValue(shown.delay_until_recursion)
            if self.decorators.toPlainText() != "\n".join(shown.decorators):
                self.decorators.setPlainText("\n".join(shown.decorators))
            self._show_tokens()
        finally:
            self._loading = False
        for child in self.findChildren(QWidget):
            if child is not self.heading and not isinstance(child, QScrollArea | QLabel):
                child.setEnabled(entry is not None)

    def form_entry(self) -> LoreEntryView | None:
        """The entry as the form has it now (None when no entry is shown)."""
        if self._entry is None:
            return None
        depth = self.scan_depth.value()
        content = self.content.toPlainText()
        return dataclasses.replace(
            self._entry,
            title=self.title.text(),
            enabled=self.enabled.isChecked(),
            constant=self.constant.isChecked(),
            keys=self.keys.keys,
            logic=LOGICS[max(0, self.logic.currentIndex())][0],
            secondary_keys=self.secondary.keys,
            case_sensitive=TRISTATE[max(0, self.case.currentIndex())][0],
            whole_words=TRISTATE[max(0, self.whole.currentIndex())][0],
            content=content,
            priority=self.priority.value(),
            scan_depth=None if depth < 0 else depth,
            probability=self.probability.value(),
            use_probability=self.use_probability.isChecked(),
            group=self.group.text().strip(),
            group_override=self.group_override.isChecked(),
            group_weight=self.group_weight.value(),
            sticky=self.sticky.value(),
            cooldown=self.cooldown.value(),
            delay=self.delay.value(),
            exclude_recursion=self.exclude_recursion.isChecked(),
            prevent_recursion=self.prevent_recursion.isChecked(),
            delay_until_recursion=self.delay_recursion.value(),
            decorators=tuple(line.strip() for line in self.decorators.toPlainText().splitlines() if line.strip()),
            tokens=self._count_tokens(content) if content != self._entry.content else self._entry.tokens,
        )

    # -- editing ---------------------------------------------------------------------------------------
    @property
    def pending(self) -> bool:
        return self._settle.isActive()

    def _on_content(self) -> None:
        self._show_tokens()
        self._changed()

    def _show_tokens(self) -> None:
        text = self.content.toPlainText()
        count = self._count_tokens(text) if text else 0
        self.tokens.setText(f"{count:,} token{'s' if count != 1 else ''}")

    def _changed(self, *_args: object) -> None:
        if not self._loading and self._entry is not None:
            self._settle.start()

    def _on_logic_changed(self, index: int) -> None:
        logic = LOGICS[max(0, index)][0]
        self.logic.setToolTip(f"{LOGIC_TIPS[logic]}: how the secondary keys combine with a primary key that matched")

    def flush(self) -> None:
        """Emit the pending change now (nothing when there is none)."""
        self._settle.stop()
        entry = self.form_entry()
        if entry is None or self._entry is None or entry == self._entry:
            return
        before, self._entry = self._entry, entry
        self.edited.emit(before, entry)

    def focus_first(self) -> None:
        self.title.setFocus(Qt.FocusReason.ShortcutFocusReason)
