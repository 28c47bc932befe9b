"""The committer's state is an enum whose values are the strings the shared health file, `familiar index
status --json` and the window have always shown (issue 20 item 3)."""

from __future__ import annotations

import json

from app.memory.records import IndexHealth, IndexState


def test_each_state_is_the_string_it_always_was() -> None:
    assert {state.name: str(state) for state in IndexState} == {
        "STARTING": "starting",
        "READY": "ready",
        "LOCKED": "locked",
        "REBUILDING": "rebuilding",
        "READER": "reader",
        "CLOSED": "closed",
    }
    assert IndexState.LOCKED == "locked"
    assert IndexState("rebuilding") is IndexState.REBUILDING
    assert f"{IndexState.READER}" == "reader"
    assert json.dumps({"state": IndexState.CLOSED}) == '{"state": "closed"}'


def test_the_health_says_its_state_in_the_same_words() -> None:
    health = IndexHealth("turns", 0, 0, 0, 0, 0, "Access is denied", 0, 0, 0, False)
    assert health.state is IndexState.READY
    assert health.state_line() == "ready"
    locked = IndexHealth("turns", 0, 0, 0, 0, 0, "Access is denied", 0, 0, 0, False, state=IndexState.LOCKED)
    assert locked.state_line() == "locked, retrying (attempt 0), last error: Access is denied"
