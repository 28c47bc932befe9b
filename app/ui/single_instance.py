"""One window per familiar: a second launch brings the first window forward instead of opening the store twice.

The first launch of a familiar takes a lock file in the familiar's folder (QLockFile: held while the process
lives, stale as soon as it dies, even after a kill -9 or a crash) and listens on a local socket named from
the data root and the familiar's name (and the user). A later launch that cannot take the lock connects to
that socket, asks the first to come forward (on a given pane, if any), waits for its "ok" and exits. The
socket a crashed process leaves behind is removed by the next one to take the lock before it listens, so it
never blocks a start.

Every wait here has a timeout; the client side runs before any event loop, the server side on Qt's.
"""

from __future__ import annotations

import getpass
import hashlib
import logging
import time
from pathlib import Path
from typing import Literal

from PySide6.QtCore import QByteArray, QLockFile, QObject, QThread, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

_log = logging.getLogger(__name__)

LOCK_FILE = ".window.lock"
CONNECT_SECONDS = 5.0  # how long a second launch tries to reach the first (it may still be starting)
ANSWER_MS = 3_000
SHOW = b"show"
OK = b"ok\n"

Claim = Literal["first", "running", "unusable"]


def instance_key(root: Path, name: str) -> str:
    """The local socket's name for one familiar of one data root of one user (short: socket paths are)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no user name known (a container): the home folder tells users apart
        user = str(Path.home())
    digest = hashlib.sha256(f"{user}\0{root.resolve()}\0{name}".encode()).hexdigest()[:20]
    return f"familiar-{digest}"


class SingleInstance(QObject):
    """Emits `activated(pane)` (pane "" for none) when another launch of the same familiar asks for the window."""

    activated = Signal(str)

    def __init__(self, folder: Path, key: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._key = key
        self._lock = QLockFile(str(folder / LOCK_FILE))
        self._lock.setStaleLockTime(0)  # a lock whose process is gone is stale at once, whatever its age
        self._server: QLocalServer | None = None

    @property
    def key(self) -> str:
        return self._key

    def claim(self) -> Claim:
        """ "first": this process is the familiar's first window (it then listens for later launches);
        "running": another process has it; "unusable": the lock file cannot be made (an unwritable folder,
        said in the log), and the window opens without this protection rather than not at all."""
        if not self._lock.tryLock(0):
            if self._lock.error() == QLockFile.LockError.LockFailedError:
                return "running"
            _log.warning(
                "cannot take %s (%s): a second window of this familiar is not kept out", LOCK_FILE, self._lock.error()
            )
            return "unusable"
        QLocalServer.removeServer(self._key)  # a socket left by a crashed first window would refuse to listen
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self._key):
            _log.warning("cannot listen for later launches on %s: %s", self._key, server.errorString())
            return "first"  # the lock still keeps a second window out; it just cannot bring this one forward
        server.newConnection.connect(self._on_new_connection)
        self._server = server
        return "first"

    def owner_pid(self) -> int | None:
        """The process holding the lock, when another one does."""
        info = self._lock.getLockInfo()  # PySide6: (pid, host name, app name); pid 0 when there is no lock
        pid = int(info[0]) if isinstance(info, tuple) and info else 0
        return pid or None

    def release(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._lock.isLocked():
            self._lock.unlock()

    def _on_new_connection(self) -> None:
        server = self._server
        while server is not None and server.hasPendingConnections():
            connection = server.nextPendingConnection()
            connection.readyRead.connect(lambda c=connection: self._on_request(c))
            connection.disconnected.connect(connection.deleteLater)

    def _on_request(self, connection: QLocalSocket) -> None:
        if not connection.canReadLine():
            return
        line = bytes(connection.readLine().data()).decode("utf-8", "replace").strip()
        word, _space, pane = line.partition(" ")
        if word.encode() != SHOW:
            connection.disconnectFromServer()
            return
        connection.write(QByteArray(OK))
        connection.flush()
        self.activated.emit(pane.strip())


def ask_first_instance(key: str, pane: str | None, *, timeout: float = CONNECT_SECONDS) -> bool:
    """From a second launch: ask the first window to come forward (on `pane`); True once it said ok."""
    deadline = time.monotonic() + timeout
    while True:
        socket = QLocalSocket()
        socket.connectToServer(key)
        if socket.waitForConnected(500):
            socket.write(QByteArray(SHOW + (b" " + pane.encode() if pane else b"") + b"\n"))
            socket.flush()
            socket.waitForBytesWritten(ANSWER_MS)  # False when flush() wrote it all already: not an error
            said = b""
            deadline_ms = time.monotonic() + ANSWER_MS / 1000
            while not said.endswith(b"\n") and time.monotonic() < deadline_ms:
                if socket.bytesAvailable() or socket.waitForReadyRead(100):
                    said += bytes(socket.readAll().data())
                elif socket.state() != QLocalSocket.LocalSocketState.ConnectedState:
                    break
            socket.disconnectFromServer()
            return said == OK
        if time.monotonic() >= deadline:
            return False
        QThread.msleep(100)  # the first window holds the lock but is not listening yet (it is starting)
