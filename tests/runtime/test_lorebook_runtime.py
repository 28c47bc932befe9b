"""The lorebook in the running familiar: a hostile key in an imported World Info file costs a reply nothing."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from app.cli import main as cli_main
from app.config.paths import FamiliarPaths
from app.lore import bounded_regex
from app.runtime.events import FailureReported, RuntimeEvent
from app.runtime.service import Familiar
from tests.conftest import ALICE, GENERAL, GUILD_ID
from tests.e2e.test_headless import CATASTROPHIC, CATASTROPHIC_FALLBACK, TRIGGER, write_world_info
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM

pytestmark = pytest.mark.asyncio

DISABLED = (
    f'lorebook.toml entry 2 "Trap": the regex key {CATASTROPHIC_FALLBACK} ran over its time limit (100 ms) '
    "on one message; it is off until lorebook.toml changes"
)


async def test_a_catastrophic_key_neither_delays_the_reply_nor_stops_the_next(
    familiar: Familiar,
    familiar_paths: FamiliarPaths,
    fake_discord: FakeDiscord,
    fake_llm: FakeLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    lore = write_world_info(
        tmp_path / "world.json", ("Echo", [CATASTROPHIC]), ("Trap", [CATASTROPHIC_FALLBACK]), ("Owl", ["owl"])
    )
    monkeypatch.setenv("FAMILIAR_HOME", str(familiar_paths.root))
    assert cli_main(["lore", "import", str(lore), "--replace"]) == 0  # accepted: both are valid regexes
    events: list[RuntimeEvent] = []
    familiar.subscribe(events.append)
    await familiar.start()
    loop = asyncio.get_running_loop()

    with caplog.at_level(logging.WARNING, logger="app.lore.scanner"):
        started = loop.time()
        await fake_discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=TRIGGER, mentions_bot=True
        )
        posted = await fake_discord.wait_for_posted(1, timeout=10)
        took = loop.time() - started
    assert took < 5.0  # Python's re alone would still be backtracking on either key
    assert posted[0].content.startswith("echo: alice: ")
    system = fake_llm.requests[-1].messages[0]["content"]
    assert "Echo lore." in system  # /(a|a)*$/ matches (the empty string at the end), as in re: in linear time
    assert "Trap lore." not in system
    assert [e.message for e in events if isinstance(e, FailureReported)] == [DISABLED]
    assert [r.getMessage() for r in caplog.records if r.name == "app.lore.scanner"] == [DISABLED]
    explanation = await familiar.replies.assemble(f"guild:{GUILD_ID}/{GENERAL}")
    assert DISABLED in next(output.note for output in explanation.outputs if output.name == "lorebook")

    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="an owl, again aaaaaaaaa!", mentions_bot=True
    )
    await fake_discord.wait_for_posted(2, timeout=10)
    assert "Owl lore." in fake_llm.requests[-1].messages[0]["content"]
    assert len([e for e in events if isinstance(e, FailureReported)]) == 1  # reported once; it stays off


async def test_a_slow_key_under_its_limit_leaves_the_event_loop_running(
    familiar: Familiar,
    familiar_paths: FamiliarPaths,
    fake_discord: FakeDiscord,
    fake_llm: FakeLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 19 item 8: a regex key the time-limited engine searches up to the scan's budget (here 0.4 s, its
    own limit set out of reach so that it is never switched off) cost the event loop all of it, on every
    message: every place, every heartbeat and the window waited. The scan runs on a thread of its own and
    the engine lets go of the GIL while it searches: the loop goes on ticking meanwhile."""
    lore = write_world_info(tmp_path / "world.json", ("Trap", [CATASTROPHIC_FALLBACK]), ("Owl", ["owl"]))
    monkeypatch.setenv("FAMILIAR_HOME", str(familiar_paths.root))
    assert cli_main(["lore", "import", str(lore), "--replace"]) == 0
    monkeypatch.setattr(bounded_regex, "KEY_BUDGET", 5.0)
    monkeypatch.setattr(bounded_regex, "SCAN_BUDGET", 0.4)
    ticks = 0
    searches: list[tuple[int, int, int, float]] = []  # thread, ticks before, ticks after, seconds
    real = bounded_regex.search_with_budget

    def watched(compiled: Any, text: str, budget: float) -> tuple[bool | None, float]:
        before = ticks
        found, took = real(compiled, text, budget)
        searches.append((threading.get_ident(), before, ticks, took))
        return found, took

    monkeypatch.setattr(bounded_regex, "search_with_budget", watched)

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.002)
            ticks += 1

    await familiar.start()
    ticker = asyncio.create_task(tick())
    try:
        await fake_discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="an owl " + TRIGGER, mentions_bot=True
        )
        await fake_discord.wait_for_posted(1, timeout=10)
    finally:
        ticker.cancel()
    assert "Owl lore." in fake_llm.requests[-1].messages[0]["content"]
    slow = [s for s in searches if s[3] >= 0.3]
    assert slow, searches  # the key was searched up to the scan's budget
    assert all(thread != threading.get_ident() for thread, *_ in searches)  # never on the loop's thread
    assert all(after - before >= 20 for _thread, before, after, _took in slow)  # the loop ran meanwhile
