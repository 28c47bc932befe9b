"""The projector registry: `[providers.memory].projectors` picks the workers, an unknown name fails at load,
and a third-party projector registered at import time runs like a built-in."""

from __future__ import annotations

import pytest

from app.config.errors import ConfigError
from app.runtime.projectors import registry as projector_registry
from app.runtime.projectors.base import ProjectorDeps
from app.runtime.projectors.registry import projector_names, register_projector
from tests.runtime.projectors.conftest import Familiars
from tests.runtime.projectors.helpers import PLACE, add_turns, learning, turn

BUILT_INS = (
    "dreaming",
    "fact_embedding",
    "fact_supersede",
    "people_dossier",
    "reflection",
    "rich_note",
    "rolling_summary",
)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test stay in a copy of the registry, dropped afterwards."""
    monkeypatch.setattr(projector_registry, "_REGISTRY", dict(projector_registry._REGISTRY))


def test_the_seven_built_ins_are_registered() -> None:
    assert projector_names() == BUILT_INS


def test_a_projector_name_is_letters_digits_and_underscores(registry: None) -> None:
    with pytest.raises(ValueError, match="letters, digits and underscores"):
        register_projector("graph-iti", lambda deps: _Counter(deps))
    with pytest.raises(ValueError, match="letters, digits and underscores"):
        register_projector("", lambda deps: _Counter(deps))


@pytest.mark.asyncio
async def test_an_unknown_projector_fails_at_load_naming_file_line_and_key(familiars: Familiars) -> None:
    with pytest.raises(ConfigError) as caught:
        await familiars.open('[providers.memory]\nprojectors = ["rich_note", "rich_notes"]\n')
    error = caught.value
    assert error.path.name == "character.toml"
    assert error.key == "providers.memory.projectors"
    lines = error.path.read_text(encoding="utf-8").splitlines()
    assert error.line is not None
    assert lines[error.line - 1].startswith("projectors = ")
    assert "'rich_notes'" in str(error)
    assert "character.toml" in str(error)
    assert f"line {error.line}" in str(error)
    assert "rich_note" in error.problem  # the known names are listed


class _Counter:
    """A third-party projector: counts the live turns it has seen, behind its own watermark."""

    name = "turn_counter"

    def __init__(self, deps: ProjectorDeps) -> None:
        self._deps = deps

    async def run(self) -> str:
        mark = await self._deps.marks.get(self.name)
        newest = await self._deps.history.store.max_turn_id()
        await self._deps.marks.set(self.name, newest)
        return f"saw {newest - mark} new turns"


@pytest.mark.asyncio
async def test_a_registered_third_party_projector_runs_when_listed(familiars: Familiars, registry: None) -> None:
    register_projector("turn_counter", _Counter)
    assert "turn_counter" in projector_names()
    familiar = await familiars.open(learning("turn_counter", "rolling_summary", summary_turns=50))
    assert familiar.learning.names == ("turn_counter", "rolling_summary")
    ids = await add_turns(familiar, turn("one"), turn("two"), turn("three", place=PLACE))

    reports = await familiar.learn_now()
    assert reports["turn_counter"] == "saw 3 new turns"
    assert await familiar.projector_deps.marks.get("turn_counter") == ids[-1]
    reports = await familiar.learn_now()
    assert reports["turn_counter"] == "saw 0 new turns"


@pytest.mark.asyncio
async def test_an_empty_list_runs_no_worker(familiars: Familiars) -> None:
    familiar = await familiars.open(learning())
    assert familiar.learning.names == ()
    await add_turns(familiar, turn("hello"))
    assert await familiar.learn_now() == {}
