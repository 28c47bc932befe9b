"""The facade finds replies by their explanations: the newest (in a place), the one before it in its
place, and the message it answered. Over the demo familiar's real store and real assemblies."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.service import Familiar
from tests.demo_familiar import BOB_DM, GENERAL_PLACE, HOME_PLACE, seed_demo

pytestmark = pytest.mark.asyncio


async def test_newest_previous_and_answered_reply(tmp_path: Path) -> None:
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env={})
    try:
        assert await familiar.newest_reply() is None  # nothing explained yet
        made = await seed_demo(familiar)
        newest, earlier = made.turns["lighthouse_reply"], made.turns["vet_reply"]
        assert await familiar.newest_reply() == newest
        assert await familiar.newest_reply(GENERAL_PLACE) == newest
        assert await familiar.newest_reply(HOME_PLACE) is None
        assert await familiar.newest_reply(BOB_DM) is None

        previous = await familiar.previous_explanation(newest)
        assert previous is not None
        assert previous.turn_id == earlier
        assert await familiar.previous_explanation(earlier) is None  # the first reply kept in #general

        answered = await familiar.answered_message(newest)
        assert answered is not None
        assert answered.author.name == "carol"
        assert answered.content.startswith("Wisp, is the lamp room in the old lighthouse still locked?")
        vet = await familiar.answered_message(earlier)
        assert vet is not None
        assert vet.content.startswith("Does anyone know a good vet near the harbour?")
        assert await familiar.answered_message(999_999) is None

        explained = await familiar.explain(newest)
        assert {lore.title for lore in explained.lore} == {"Wisp", "The lighthouse"}
        assert [(d.title, d.reason) for d in explained.lore_dropped][:1] == [("Harbour market", "entry cap")]
        assert explained.facts
    finally:
        await familiar.close()
