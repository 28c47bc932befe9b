"""The window's local chat on the real runtime (real store, the openai client against the fake LLM server): the
greeting it opens with, regenerate and retry, clearing and its undo, and the name the familiar goes by."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.cards import create_familiar_from_card
from app.runtime.errors import FamiliarError, ReplyFailedError
from app.runtime.events import RuntimeEvent, SettingsReloaded
from app.runtime.names import LOCAL_PLACE
from app.runtime.service import Familiar
from tests.fakes.llm_server import FakeLLM, RecordedRequest, ScriptedReply
from tests.runtime.projectors.helpers import worker_of

pytestmark = pytest.mark.asyncio

SAMPLES = Path(__file__).parent / "samples"


def _replies(fake_llm: FakeLLM) -> list[RecordedRequest]:
    return [r for r in fake_llm.requests if worker_of(r.messages) is None]


def _said(request: RecordedRequest) -> list[tuple[str, str]]:
    """The conversation a reply request carried (role, text), after the system prompt."""
    return [(str(m["role"]), str(m["content"])) for m in request.messages if m["role"] != "system"]


async def _card_familiar(tmp_path: Path, fake_llm: FakeLLM, card: str = "wisp_v2.json") -> Familiar:
    made = create_familiar_from_card(SAMPLES / card, tmp_path / "home")
    paths = FamiliarPaths(tmp_path / "home", made.name)
    env = {"FAMILIAR_LLM_BASE_URL": fake_llm.base_url, "FAMILIAR_LLM_MODEL": "test-model"}
    return await Familiar.open(paths, SecretStore(made.name, paths.secrets_file, use_keyring=False), env=env)


# -- the greeting ------------------------------------------------------------------------------------------
async def test_a_card_s_greeting_and_its_alternates_open_the_chat(tmp_path: Path, fake_llm: FakeLLM) -> None:
    familiar = await _card_familiar(tmp_path, fake_llm)
    try:
        greetings = await familiar.local_greetings()
        assert greetings == [
            '*The lantern on the pier flickers.*\n\nOh! A new face. Welcome to "Saltmere", traveller.',
            "*A lantern sways in the wind.* Stormy night, isn't it?",
        ]
        assert await familiar.load_local_history() == []  # an empty chat: the window shows the greeting

        fake_llm.script("Stormy indeed. Come in, warm your hands.")
        line = await familiar.chat_local("It is! Can I come in?", greeting=greetings[1])

        history = await familiar.load_local_history()
        assert [(h.author, h.content, h.greeting) for h in history] == [
            ("Wisp", greetings[1], True),
            ("You", "It is! Can I come in?", False),
            ("Wisp", "Stormy indeed. Come in, warm your hands.", False),
        ]
        assert history[-1] == line
        # The familiar knows what it opened with, as a SillyTavern chat's first message.
        (request,) = _replies(fake_llm)
        assert ("assistant", greetings[1]) in _said(request)
        with pytest.raises(FamiliarError, match="not a reply"):
            await familiar.explain(history[0].turn_id)

        # Once the chat has begun, a greeting opens nothing.
        await familiar.chat_local("Thank you.", greeting=greetings[0])
        assert [h.greeting for h in await familiar.load_local_history()] == [True, False, False, False, False]
    finally:
        await familiar.close()


async def test_greetings_expand_the_name_macros_and_follow_the_settings(familiar: Familiar) -> None:
    assert await familiar.local_greetings() == []  # no greeting, no card: the chat opens empty
    view = await familiar.character.load()
    draft = dataclasses.replace(view.draft, display_name="Moth", greeting="  *{{char}} bows to {{user}}.*  ")
    await familiar.character.save(draft, view.revision)
    assert await familiar.local_greetings() == ["*Moth bows to You.*"]


# -- regenerate and retry ------------------------------------------------------------------------------------
async def test_regenerating_the_last_reply_adds_a_revision_and_the_explanation_follows(
    familiar: Familiar, fake_llm: FakeLLM
) -> None:
    fake_llm.script("The lamp room is open.", "The lamp room is locked since the storm.")
    first = await familiar.chat_local("Is the lamp room open?")

    again = await familiar.regenerate_local(first.turn_id)

    assert again.content == "The lamp room is locked since the storm."
    assert again.turn_id != first.turn_id  # a new turn: turns are never updated in place
    history = await familiar.load_local_history()
    assert [h.content for h in history] == ["Is the lamp room open?", "The lamp room is locked since the storm."]
    # The replaced reply is kept, marked superseded, and out of search; the new one is found.
    (old,) = await familiar.history.store.turns_by_ids([first.turn_id])
    assert old.content == "The lamp room is open."
    row = await familiar.history.store.read_one("SELECT superseded FROM turns WHERE id = ?", (first.turn_id,))
    assert row == (1,)
    await familiar.history.catch_up()
    found = [h.turn_id for h in await familiar.search_turns("lamp room")]
    assert again.turn_id in found
    assert first.turn_id not in found
    # The new reply was built for the same message, without the reply it replaces.
    request = _replies(fake_llm)[-1]
    assert _said(request)[-1][1].endswith("Is the lamp room open?")
    assert all("is open" not in text for _role, text in _said(request))
    # "Why did it say that" explains the new reply; the one before it in the chat is not the replaced one.
    assert await familiar.newest_reply(LOCAL_PLACE) == again.turn_id
    assert (await familiar.explain(again.turn_id)).turn_id == again.turn_id
    assert await familiar.previous_explanation(again.turn_id) is None


async def test_only_the_last_reply_can_be_regenerated(familiar: Familiar, fake_llm: FakeLLM) -> None:
    fake_llm.script("One.", "Two.")
    first = await familiar.chat_local("count with me")
    await familiar.chat_local("and again")
    with pytest.raises(FamiliarError, match="no longer the chat's last message"):
        await familiar.regenerate_local(first.turn_id)


async def test_a_failed_reply_keeps_the_message_and_retry_answers_it_once(
    familiar: Familiar, fake_llm: FakeLLM
) -> None:
    fake_llm.script(ScriptedReply(status=500, error_message="the model fell over"))
    with pytest.raises(ReplyFailedError) as failed:
        await familiar.chat_local("are you there?")
    said = failed.value.said
    assert (said.author, said.content, said.from_familiar) == ("You", "are you there?", False)
    assert [h.content for h in await familiar.load_local_history()] == ["are you there?"]

    fake_llm.script("Here now.")
    line = await familiar.regenerate_local(said.turn_id)

    assert line.content == "Here now."
    assert [h.content for h in await familiar.load_local_history()] == ["are you there?", "Here now."]
    assert (await familiar.explain(line.turn_id)).turn_id == line.turn_id


async def test_a_message_refused_before_it_is_stored_is_a_plain_error(tmp_path: Path) -> None:
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env={})
    try:
        with pytest.raises(FamiliarError, match="No LLM endpoint") as refused:
            await familiar.chat_local("hello", greeting="Welcome!")
        assert not isinstance(refused.value, ReplyFailedError)
        assert await familiar.load_local_history() == []
    finally:
        await familiar.close()


# -- clearing -------------------------------------------------------------------------------------------------
async def test_clearing_starts_the_chat_afresh_keeps_the_turns_and_can_be_undone(
    familiar: Familiar, fake_llm: FakeLLM
) -> None:
    fake_llm.script("Noted: the kettle.", "Hello again.")
    await familiar.chat_local("remember the kettle")

    cleared = await familiar.clear_local()

    assert cleared.messages == 2
    assert await familiar.load_local_history() == []
    await familiar.history.catch_up()
    assert {h.content for h in await familiar.search_turns("kettle")} == {"remember the kettle", "Noted: the kettle."}
    await familiar.chat_local("hello")  # a reply after the clear is built without what was cleared
    assert all("kettle" not in text for _role, text in _said(_replies(fake_llm)[-1]))

    assert await familiar.restore_local(cleared) == 2
    assert [h.content for h in await familiar.load_local_history()] == [
        "remember the kettle",
        "Noted: the kettle.",
        "hello",
        "Hello again.",
    ]
    await familiar.clear_local()
    with pytest.raises(FamiliarError, match="cleared again"):
        await familiar.restore_local(cleared)  # an undo undoes its own clear only


async def test_an_undo_of_an_older_clear_is_refused(familiar: Familiar, fake_llm: FakeLLM) -> None:
    fake_llm.script("A.", "B.")
    await familiar.chat_local("first")
    older = await familiar.clear_local()
    await familiar.chat_local("second")
    await familiar.clear_local()
    with pytest.raises(FamiliarError, match="cleared again"):
        await familiar.restore_local(older)
    assert await familiar.load_local_history() == []
    empty = await familiar.clear_local()  # nothing left to clear
    assert empty.messages == 0
    assert await familiar.restore_local(empty) == 0


# -- the name -------------------------------------------------------------------------------------------------
async def test_the_display_name_is_the_settings_and_a_save_announces_it(familiar: Familiar) -> None:
    assert (familiar.familiar_name, familiar.display_name) == ("default", "Wisp")
    heard: list[RuntimeEvent] = []
    familiar.subscribe(heard.append)
    view = await familiar.character.load()
    await familiar.character.save(dataclasses.replace(view.draft, display_name="Moth"), view.revision)
    assert familiar.display_name == "Moth"
    assert familiar.familiar_name == "default"  # the folder stays where a folder is meant
    assert [e.display_name for e in heard if isinstance(e, SettingsReloaded)] == ["Moth"]
