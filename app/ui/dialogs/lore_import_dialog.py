"""The lorebook's import preview: each entry of the file against the book (the draft), new, changed or
already there, with a choice each, and the chosen one in full (a word diff for a new version)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.views import ImportItem, ImportPreview, LoreEntryView
from app.runtime.textdiff import word_diff
from app.ui.widgets.lore_entry_editor import LOGICS
from app.ui.widgets.word_diff import diff_html, legend_html

FIELD_WORDS = {
    "title": "title", "id": "id", "keys": "keys", "secondary_keys": "secondary keys", "logic": "logic",
    "content": "content", "priority": "priority", "constant": "constant", "enabled": "enabled",
    "case_sensitive": "match case", "whole_words": "whole words", "scan_depth": "scan depth",
    "probability": "probability", "use_probability": "use the probability", "group": "inclusion group",
    "group_override": "wins its group", "group_weight": "group weight", "use_group_scoring": "group scoring",
    "sticky": "sticky", "cooldown": "cooldown", "delay": "delay", "exclude_recursion": "not activated by others",
    "prevent_recursion": "activates no others", "delay_until_recursion": "recursion delay",
    "extensions": "fields of its own (extensions)",
}  # fmt: skip
"""What each field of an entry is called in the import preview."""


def _field_text(entry: LoreEntryView, name: str) -> str:
    value = getattr(entry, name, None)
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value) or "none"
    if value is None:
        return "the book's"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def import_item_html(item: ImportItem, book: Sequence[LoreEntryView]) -> str:
    """An entry of the file to import, in full: its keys and content; for a new version of an entry of the
    book, what changes, with a word diff of the content."""
    entry = item.entry
    old = book[item.existing] if item.existing is not None and item.existing < len(book) else None
    title = html.escape(entry.title or "(untitled)")
    parts = [f"<h3>{title}</h3>"]
    if item.action == "changed" and old is not None:
        fields = ", ".join(FIELD_WORDS.get(f, f) for f in item.changed_fields)
        parts.append(f"<p>A new version of entry {(item.existing or 0) + 1}, “{html.escape(old.title)}”: {fields}.</p>")
    elif item.action == "unchanged":
        parts.append(f"<p>Already in the book as entry {(item.existing or 0) + 1}, exactly so.</p>")
    else:
        parts.append("<p>New: the book has no entry of this title and id.</p>")
    changed = set(item.changed_fields) if item.action == "changed" and old is not None else set()

    def shown(name: str, text: str) -> str:
        if name in changed and old is not None:
            return f"{html.escape(text)} <i>(was: {html.escape(_field_text(old, name))})</i>"
        return html.escape(text)

    rows = [("Keys", shown("keys", _field_text(entry, "keys")))]
    if entry.secondary_keys or "secondary_keys" in changed:
        logic = dict(LOGICS).get(entry.logic, entry.logic)
        rows.append(("Secondary keys", shown("secondary_keys", _field_text(entry, "secondary_keys")) + f" ({logic})"))
    if "title" in changed and old is not None:
        rows.append(("Title", shown("title", entry.title)))
    for name in item.changed_fields:
        if old is None or name in ("content", "keys", "secondary_keys", "title") or not hasattr(entry, name):
            continue
        rows.append(
            (
                FIELD_WORDS.get(name, name).capitalize(),
                f"{html.escape(_field_text(old, name))} → {html.escape(_field_text(entry, name))}",
            )
        )
    parts.append("<table cellspacing='0' cellpadding='2'>")
    for label, cell in rows:
        parts.append(f"<tr><td><b>{html.escape(label)}</b>&nbsp;&nbsp;</td><td>{cell}</td></tr>")
    parts.append("</table>")
    if item.action == "changed" and old is not None and "content" in item.changed_fields:
        parts.append(f"<p><b>Content</b> ({legend_html('the file', 'the book')})</p>")
        parts.append(f"<p>{diff_html(word_diff(old.content, entry.content))}</p>")
    else:
        parts.append("<p><b>Content</b></p>")
        parts.append(f"<p>{html.escape(entry.content) or '<i>none</i>'}</p>".replace("\n", "<br>"))
    return "".join(parts)


class ImportDialog(QDialog):
    """Each entry of the file against the book (the draft): new, changed (which fields) or already there, with
    a choice each; the chosen row in full below (keys, content, and for a new version a diff)."""

    def __init__(
        self, preview: ImportPreview, book: Sequence[LoreEntryView] = (), parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Import {Path(preview.file).name}")
        self._preview = preview
        self._book = tuple(book)
        counts = {a: sum(1 for i in preview.items if i.action == a) for a in ("added", "changed", "unchanged")}
        summary = QLabel(
            f"{preview.source}: {counts['added']} new, {counts['changed']} changed, "
            f"{counts['unchanged']} already in the book. Nothing is written until you save the lorebook."
        )
        summary.setWordWrap(True)
        self.table = QTableWidget(len(preview.items), 4)
        self.table.setHorizontalHeaderLabels(["Take", "Entry", "Keys", "Against the book"])
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        self._boxes: list[QCheckBox] = []
        for row, item in enumerate(preview.items):
            box = QCheckBox()
            box.setChecked(item.action != "unchanged")
            box.setEnabled(item.action != "unchanged")
            box.setToolTip("Take this entry" if item.action != "unchanged" else "Already in the book")
            box.toggled.connect(self._sync)
            self._boxes.append(box)
            self.table.setCellWidget(row, 0, box)
            title = item.entry.title or ", ".join(item.entry.keys)
            keys = ", ".join(item.entry.keys)
            what = {
                "added": "new",
                "changed": "changes entry "
                f"{(item.existing or 0) + 1}: {', '.join(FIELD_WORDS.get(f, f) for f in item.changed_fields)}",
                "unchanged": "already in the book",
            }[item.action]
            for column, text in ((1, title), (2, keys), (3, what)):
                cell = QTableWidgetItem(text)
                cell.setToolTip(text)
                self.table.setItem(row, column, cell)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.table.resizeColumnToContents(1)
        self.table.resizeColumnToContents(2)
        for column in (1, 2):
            self.table.setColumnWidth(column, min(self.table.columnWidth(column), 220))
        self.detail = QTextBrowser()
        self.detail.setOpenLinks(False)
        self.table.currentCellChanged.connect(self._on_table_current_cell_changed)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.take_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.take_button.setText("Import the chosen")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        split.addWidget(self.table)
        split.addWidget(self.detail)
        split.setSizes([260, 240])
        layout = QVBoxLayout(self)
        layout.addWidget(summary)
        layout.addWidget(split, 1)
        layout.addWidget(self.buttons)
        self.resize(760, 560)
        if preview.items:
            self.table.setCurrentCell(0, 1)
        self._sync()

    def _on_table_current_cell_changed(self, row: int, _column: int, _old_row: int, _old_column: int) -> None:
        items = self._preview.items
        self.detail.setHtml(import_item_html(items[row], self._book) if 0 <= row < len(items) else "")

    def _sync(self, *_args: object) -> None:
        """Import the chosen does something only with something chosen."""
        count = len(self.chosen())
        self.take_button.setEnabled(count > 0)
        self.take_button.setToolTip(
            f"Put the {count} chosen entries in the book (Save writes them)" if count else "Tick an entry to import"
        )

    def chosen(self) -> frozenset[int]:
        return frozenset(
            item.number for item, box in zip(self._preview.items, self._boxes, strict=True) if box.isChecked()
        )
