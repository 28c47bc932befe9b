"""Every reply on Discord stores its explanation, and `familiar explain TURN_ID --json` prints it:
the real discord.py client against the fake Discord, the real openai client against the fake LLM."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from app.cli import main
from app.config.paths import FamiliarPaths
from app.memory.facts import NewFact
from app.memory.records import Turn
from app.runtime.api.views import Explanation
from app.runtime.errors import FamiliarError
from app.runtime.service import Familiar
from tests.conftest import ALICE, GENERAL, GUILD_ID
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM

pytestmark = pytest.mark.asyncio
PLACE = f"guild:{GUILD_ID}/{GENERAL}"


async def test_a_split_discord_reply_is_explained_from_each_of_its_messages(
    familiar: Familiar,
    familiar_paths: FamiliarPaths,
    fake_discord: FakeDiscord,
    fake_llm: FakeLLM,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    familiar_paths.lorebook_toml.write_text(
        '[[entries]]\ntitle = "Kettle lore"\nkeys = ["kettle"]\ncontent = "The kettle sings in D minor."\n',
        encoding="utf-8",
    )
    outcome = await familiar.history.insert_fact(
        NewFact("Alice takes her tea black.", "semantic", 6, 1.0, (f"discord:{ALICE}",), PLACE, origin="remember")
    )
    assert outcome.fact is not None
    await familiar.history.facts_index.flush()
    await familiar.start()
    fake_llm.script("Tea! " * 500)  # 2,500 characters: two Discord messages
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="is the kettle on for tea?", mentions_bot=True
    )
    posted = await fake_discord.wait_for_posted(2)
    await fake_discord.wait_for_delivered()

    sent = fake_llm.requests[0].messages[0]["content"]
    assert "The kettle sings in D minor." in sent
    assert "Alice takes her tea black." in sent

    async def explained_turns() -> list[tuple[Turn, Explanation]]:
        """Each posted message's turn and its explanation, once stored: the reply turn is appended
        and linked right after Discord accepts the message, so poll (bounded) until both are there."""
        while True:
            found = []
            for message in posted:
                turn = await familiar.history.store.latest_revision("discord", message.message_id)
                if turn is None:
                    continue
                with contextlib.suppress(FamiliarError):  # not linked yet
                    found.append((turn, await familiar.explain(turn.id)))
            if len(found) == len(posted):
                return found
            await asyncio.sleep(0.02)

    pairs = await asyncio.wait_for(explained_turns(), 5)
    turns = [turn for turn, _e in pairs]
    explained = [e for _t, e in pairs]
    assert explained[0].explanation_id == explained[1].explanation_id
    assert explained[0].lore[0].title == "Kettle lore"
    assert explained[0].lore[0].key == "kettle"
    assert [f.fact_id for f in explained[0].facts] == [outcome.fact.id]
    assert explained[0].place.name == "Lantern Club #general"  # named from what the adapter saw

    # The same from the terminal, beside the running familiar (same store, WAL readers).
    monkeypatch.setenv("FAMILIAR_HOME", str(familiar_paths.root))
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["explain", str(turns[1].id), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    document = json.loads(out)
    assert document["turn_id"] == turns[1].id
    assert {layer["name"] for layer in document["layers"]} == {
        "character", "lorebook", "summary", "reflections", "dossiers", "memory", "history",
    }  # fmt: skip
    assert all(layer["tokens"] <= layer["budget"] for layer in document["layers"])
    assert (document["place"], document["place_name"]) == (PLACE, "Lantern Club #general")  # the key stays
    code = await asyncio.to_thread(main, ["explain", str(turns[1].id)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith(f"reply turn {turns[1].id} in Lantern Club #general (")  # by name, not guild:500/501
    code = await asyncio.to_thread(main, ["explain", "999999"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "turn 999999 has no explanation" in err
