"""Creating the QApplication without Qt's abort: when no platform plugin can start, one line and exit status 1.

`app.platform_check` catches what can be known before Qt loads (a missing library, no display). What only Qt can
find out (an X server that refuses the connection, a plugin that fails for another reason) ends in Qt's fatal
"no Qt platform plugin could be initialized" and an abort (exit 134). While the QApplication is being created, a
message handler turns that fatal message into one line on stderr, with what Qt said just before, and exits 1.
Other messages Qt prints meanwhile are passed on unchanged once the application exists.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from PySide6.QtCore import QMessageLogContext, QtMsgType, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from app.platform_check import HEADLESS

EXIT_NO_WINDOW = 1
# Qt 6.5+ says this whenever the xcb plugin fails to load, whatever was missing: it would mislead.
_MISLEADING = "xcb-cursor0 or libxcb-cursor0 is needed"


def start_application(argv: Sequence[str]) -> QApplication:
    """The running QApplication, or a new one; never Qt's abort when the platform plugin cannot start."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    said: list[str] = []

    def on_message(kind: QtMsgType, context: QMessageLogContext, message: str) -> None:
        line = f"{context.category}: {message}" if context.category and context.category != "default" else message
        if kind != QtMsgType.QtFatalMsg:
            said.append(line)
            return
        before = [s for s in said if _MISLEADING not in s]
        detail = "; ".join(" ".join(s.split()) for s in before[-2:])
        sys.stderr.write(
            f"error: cannot open a window: Qt could not start its platform plugin"
            f"{f' ({detail})' if detail else ''}. To run without a window: {HEADLESS}\n"
        )
        sys.stderr.flush()
        os._exit(EXIT_NO_WINDOW)  # returning would let Qt abort; nothing is open yet that needs closing

    qInstallMessageHandler(on_message)
    try:
        application = QApplication(list(argv))
    finally:
        qInstallMessageHandler(None)
    for line in said:
        sys.stderr.write(line + "\n")
    return application
