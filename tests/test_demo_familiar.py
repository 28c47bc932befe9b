"""The demo familiar the pane tests and the README's screenshots use keeps seeding cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config.secrets import SecretStore
from app.runtime.service import Familiar
from tests.demo_familiar import ALTERNATE_GREETINGS, GREETING, make_demo_familiar


@pytest.mark.asyncio
async def test_the_demo_familiar_has_a_queue_a_history_and_a_forgotten_fact(tmp_path: Path) -> None:
    paths = await make_demo_familiar(tmp_path / "home")
    familiar = await Familiar.open(paths, SecretStore(paths.name, paths.secrets_file, use_keyring=False), env={})
    try:
        queue = await familiar.memory.pending()
        assert [item.fact.content for item in queue.items][:2] == [
            "bob is planning a surprise party for carol on the 14th.",
            "carol is learning the cello.",
        ]
        assert queue.snoozed == 1
        assert len(await familiar.memory.tombstones()) == 1
        assert {p.person.name for p in await familiar.memory.people()} >= {"alice", "bob", "carol"}
    finally:
        await familiar.close()


@pytest.mark.asyncio
async def test_the_demo_with_a_local_chat_opened_it_with_its_greeting(tmp_path: Path) -> None:
    """`--local-chat`: the Chat screenshot's data (the README's docs/screenshots/chat.png)."""
    paths = await make_demo_familiar(tmp_path / "home", local_chat=True)
    familiar = await Familiar.open(paths, SecretStore(paths.name, paths.secrets_file, use_keyring=False), env={})
    try:
        lines = await familiar.load_local_history()
        assert [(line.author, line.greeting) for line in lines] == [
            ("Wisp", True),
            ("You", False),
            ("Wisp", False),
            ("You", False),
            ("Wisp", False),
        ]
        assert await familiar.local_greetings() == [GREETING, *ALTERNATE_GREETINGS]
        assert (await familiar.explain(lines[-1].turn_id)).turn_id == lines[-1].turn_id
        assert await familiar.newest_reply() != lines[-1].turn_id  # the Why pane still opens on #general's
    finally:
        await familiar.close()
