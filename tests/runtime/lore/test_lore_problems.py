"""Lorebook problems where the user is: a broken lorebook.toml keeps the last good book and says what is
wrong (file, line, entry, key) in a LorebookStatus event; a fixed file clears it. The real familiar, the
real file, the fake LLM."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from app.config.paths import FamiliarPaths
from app.runtime.events import LorebookStatus, RuntimeEvent
from app.runtime.service import Familiar
from tests.fakes.llm_server import FakeLLM

pytestmark = pytest.mark.asyncio

GOOD = '# my lore\n\n[[entries]]\ntitle = "Owl"\nkeys = ["owl"]\ncontent = "Owl lore."\n'
MISSPELT = '# my lore\n\n[[entries]]\ntitle = "Owl"\nkyes = ["owl"]\ncontent = "Owl lore, edited."\n'
FIXED = '# my lore\n\n[[entries]]\ntitle = "Owl"\nkeys = ["owl"]\ncontent = "Owl lore, fixed."\n'


class Statuses:
    def __init__(self) -> None:
        self.seen: list[LorebookStatus] = []
        self._changed = asyncio.Event()

    def __call__(self, event: RuntimeEvent) -> None:
        if isinstance(event, LorebookStatus):
            self.seen.append(event)
            self._changed.set()

    async def wait_for(self, ready: Callable[[LorebookStatus], bool], timeout: float = 10.0) -> LorebookStatus:
        async with asyncio.timeout(timeout):
            while True:
                for status in self.seen:
                    if ready(status):
                        return status
                self._changed.clear()
                await self._changed.wait()


def system_prompt(fake_llm: FakeLLM) -> str:
    content = fake_llm.requests[-1].messages[0]["content"]
    assert isinstance(content, str)
    return content


async def test_a_misspelt_field_keeps_the_last_good_book_and_the_fix_clears_the_banner(
    familiar: Familiar, familiar_paths: FamiliarPaths, fake_llm: FakeLLM
) -> None:
    lorebook = familiar_paths.lorebook_toml
    lorebook.write_text(GOOD, encoding="utf-8")
    statuses = Statuses()
    familiar.subscribe(statuses)
    familiar.start_watching()

    await familiar.chat_local("have you seen the owl?")
    assert "Owl lore." in system_prompt(fake_llm)

    lorebook.write_text(MISSPELT, encoding="utf-8")
    broken = await statuses.wait_for(lambda s: s.problem is not None)
    assert broken.file == str(lorebook)
    assert broken.line == 5
    assert broken.problem == (
        f"{lorebook}, line 5, entry 1 \"Owl\", key 'kyes': unknown key (did you mean 'keys'?); "
        "keep anything else under [entries.extensions]"
    )
    assert familiar.get_status().lore_problem == broken.problem
    await familiar.chat_local("the owl again")
    assert "Owl lore." in system_prompt(fake_llm)  # the last good book, not an empty one
    assert "edited" not in system_prompt(fake_llm)
    assembly = await familiar.assemble("local")
    note = next(o.note for o in assembly.outputs if o.name == "lorebook")
    assert note.startswith(f"lorebook.toml not used: {lorebook}, line 5, entry 1 \"Owl\", key 'kyes'")

    lorebook.write_text(FIXED, encoding="utf-8")
    fixed = await statuses.wait_for(lambda s: s.problem is None)
    assert fixed.banner == ""
    assert familiar.get_status().lore_problem is None
    await familiar.chat_local("and the owl?")
    assert "Owl lore, fixed." in system_prompt(fake_llm)
    assert [s.problem is None for s in statuses.seen] == [False, True]  # each change said once


async def test_a_syntax_error_at_start_is_reported_once_with_its_line(
    familiar_paths: FamiliarPaths, familiar: Familiar
) -> None:
    familiar_paths.lorebook_toml.write_text('[[entries]]\ntitle = "Owl\nkeys = ["owl"]\n', encoding="utf-8")
    statuses = Statuses()
    familiar.subscribe(statuses)
    first = await familiar.lore.check()
    assert first is not None
    assert first.line == 2
    assert first.problem is not None
    assert "line 2: not valid TOML" in first.problem
    assert await familiar.lore.check() is None  # unchanged: nothing new to say
    assert len(statuses.seen) == 1


async def test_keys_that_never_match_are_warnings_naming_the_entry(
    familiar_paths: FamiliarPaths, familiar: Familiar
) -> None:
    familiar_paths.lorebook_toml.write_text(
        '[[entries]]\ntitle = "A"\nkeys = ["a"]\n\n[[entries]]\ntitle = "Moon"\nkeys = ["/(/", "moon"]\n',
        encoding="utf-8",
    )
    status = await familiar.lore.check()
    assert status is not None
    assert status.problem is None
    assert status.warnings[0].startswith('lorebook.toml entry 2 "Moon": key "/(/" never matches: invalid regex')
    assert status.banner == status.warnings[0]
