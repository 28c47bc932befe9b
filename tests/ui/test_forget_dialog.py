"""Forget by click: the preview dialog counts what goes (and the messages, when ticked), then the forget
is the deferred, undoable one. On the real runtime over a real store."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.memory.facts import NewFact
from app.memory.records import NewTurn
from app.runtime.api.views import FactView
from app.runtime.service import Familiar
from app.ui.dialogs.forget_dialog import ForgetDialog, forget_with_preview
from app.ui.ops import Operations
from tests.ui.support import QT_STRICT, WAIT_MS, Run, make_context

pytestmark = QT_STRICT

PLACE = "guild:500/501"


def fact_with_source(run: Run[Any], familiar: Familiar) -> FactView:
    turn = run(
        familiar.history.append_turn(
            NewTurn(
                platform="discord", place=PLACE, guild_id=500, channel_id=501, message_id=1,
                author_key="discord:7001", author_name="alice", content="my vault code is 4417",
                created_at=datetime.now(UTC),
            )
        )
    )  # fmt: skip
    assert turn is not None
    outcome = run(
        familiar.history.insert_fact(
            NewFact(
                "alice's vault code is 4417", "episodic", 6, 0.9, ("discord:7001",), PLACE, source_turn_ids=(turn.id,)
            )
        )
    )
    assert outcome.fact is not None
    return run(familiar.memory.fact(outcome.fact.id)).fact


def items(dialog: ForgetDialog) -> list[str]:
    return [dialog.goes.item(i).text() for i in range(dialog.goes.count())]


def test_the_preview_says_what_goes_and_the_messages_only_when_ticked(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar
) -> None:
    fact = fact_with_source(run, real_familiar)
    dialog = ForgetDialog(real_familiar.memory, fact)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.load()
    qtbot.waitUntil(lambda: dialog.forget_button.isEnabled(), timeout=WAIT_MS)
    assert "1 version of the fact" in items(dialog)
    assert not any("vault code is 4417" in line for line in items(dialog))
    assert dialog.redact.text().startswith("Also erase the 1 message it came from")
    dialog.redact.setChecked(True)
    qtbot.waitUntil(lambda: any("message by alice" in line for line in items(dialog)), timeout=WAIT_MS)
    assert "1 message it came from (text erased)" in items(dialog)
    dialog.forget_button.click()
    assert dialog.decision is not None
    assert dialog.decision.redact_sources
    # Nothing was written by the preview.
    assert run(real_familiar.memory.fact(fact.id)).fact.status == "active"


def test_forget_with_preview_schedules_the_undoable_forget(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar
) -> None:
    fact = fact_with_source(run, real_familiar)
    context = make_context(qtbot, real_familiar)
    errors: list[str] = []
    ops = Operations(show_error=errors.append, parent=context.window)
    task = asyncio.ensure_future(
        forget_with_preview(real_familiar.memory, context.undo, ops, fact, context.window, initiator=None)
    )
    dialog: list[ForgetDialog] = []
    qtbot.waitUntil(lambda: bool(dialog.extend(context.window.findChildren(ForgetDialog)) or dialog), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: dialog[0].forget_button.isEnabled(), timeout=WAIT_MS)
    dialog[0].forget_button.click()
    qtbot.waitUntil(task.done, timeout=WAIT_MS)
    assert task.result() is True
    assert errors == []
    assert [f.id for f in run(real_familiar.memory.list_facts())] == []  # out of every read at once
    assert len(run(real_familiar.memory.scheduled_forgets())) == 1
    context.undo.undo_action.trigger()  # Ctrl+Z: the forget is cancelled, the fact is back
    qtbot.waitUntil(lambda: bool(run(real_familiar.memory.list_facts())), timeout=WAIT_MS)


def test_cancel_forgets_nothing(qtbot: QtBot, run: Run[Any], real_familiar: Familiar) -> None:
    fact = fact_with_source(run, real_familiar)
    host = QWidget()
    qtbot.addWidget(host)
    context = make_context(qtbot, real_familiar)
    errors: list[str] = []
    ops = Operations(show_error=errors.append, parent=host)
    task = asyncio.ensure_future(forget_with_preview(real_familiar.memory, context.undo, ops, fact, host))
    found: list[ForgetDialog] = []
    qtbot.waitUntil(lambda: bool(found.extend(host.findChildren(ForgetDialog)) or found), timeout=WAIT_MS)
    found[0].reject()
    qtbot.waitUntil(task.done, timeout=WAIT_MS)
    assert task.result() is False
    assert run(real_familiar.memory.scheduled_forgets()) == []
