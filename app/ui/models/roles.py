"""Custom item data roles shared by the models."""

from __future__ import annotations

from PySide6.QtCore import Qt

RecordRole: int = Qt.ItemDataRole.UserRole + 1
"""Returns the row's frozen record (an Activity, a GuildInfo, a ChatLine...)."""
