"""The demo familiar the pane tests and the README's screenshots use keeps seeding cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config.secrets import SecretStore
from app.runtime.service import Familiar
from tests.demo_familiar import make_demo_familiar


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
