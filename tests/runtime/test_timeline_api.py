"""`facade.memory.timeline*` on the real runtime over the demo familiar (real SQLite and tantivy): pages of
the slice with names, the status at the recorded time, forgotten facts as content-free markers, the
extent for the axes and filters, and diffs between two recorded times with word diffs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths, create_familiar
from app.config.secrets import SecretStore
from app.memory.catalog import Catalog
from app.runtime import timeline as timeline_module
from app.runtime.api.views import FactView, ForgottenFact, TimelineFilters, TimelinePoint, TimelineSlice
from app.runtime.errors import FamiliarError
from app.runtime.service import Familiar
from tests.demo_familiar import BOB, DemoFacts, seed_demo

pytestmark = pytest.mark.asyncio

NOW = datetime.now(UTC)
SECRET = "bob told Wisp a secret in a DM."


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


@pytest_asyncio.fixture
async def demo(tmp_path: Path) -> AsyncIterator[tuple[Familiar, DemoFacts]]:
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    create_familiar(paths)
    familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env={})
    try:
        yield familiar, await seed_demo(familiar, now=NOW)
    finally:
        await familiar.close()


async def test_a_page_of_the_slice_names_people_and_places(demo: tuple[Familiar, DemoFacts]) -> None:
    familiar, made = demo
    whole = await familiar.memory.timeline()
    first = await familiar.memory.timeline(limit=3)
    rest = await familiar.memory.timeline(limit=100, offset=3)

    assert whole.total == len(whole.rows) == first.total
    assert [r.id for r in (*first.rows, *rest.rows)] == [r.id for r in whole.rows]
    assert (first.offset, rest.offset) == (0, 3)
    lisbon = next(r for r in whole.rows if r.id == made.active["lisbon"])
    assert isinstance(lisbon, FactView)
    assert ([p.name for p in lisbon.subjects], lisbon.scope.name) == (["alice"], "Lantern Club")
    assert made.other["porto"] not in {r.id for r in whole.rows}  # an older version: not believed now
    assert {r.status for r in whole.rows} >= {"active", "pending", "archived", "rejected", "forgotten"}


async def test_the_status_shown_is_the_one_at_the_recorded_time(demo: tuple[Familiar, DemoFacts]) -> None:
    familiar, made = demo
    vegetarian = made.active["vegetarian"]  # proposed 20.4 days ago, accepted 19 days ago

    def status_of(rows: tuple[FactView | ForgottenFact, ...]) -> str:
        return next(r.status for r in rows if r.id == vegetarian)

    assert status_of((await familiar.memory.timeline(recorded_at=ago(19.5))).rows) == "pending"
    assert status_of((await familiar.memory.timeline(recorded_at=ago(18))).rows) == "active"
    porto = await familiar.memory.timeline(recorded_at=ago(10), world_at=ago(10))
    assert made.other["porto"] in {r.id for r in porto.rows}  # believed then: alice lived in Porto
    assert made.active["lisbon"] not in {r.id for r in porto.rows}
    pending_then = await familiar.memory.timeline(recorded_at=ago(19.5), status="pending")
    assert vegetarian in {r.id for r in pending_then.rows}
    assert all(r.status == "pending" for r in pending_then.rows)


async def test_a_forgotten_fact_is_a_marker_that_says_nothing_of_its_text(demo: tuple[Familiar, DemoFacts]) -> None:
    familiar, made = demo
    sliced = await familiar.memory.timeline(world_at=ago(1))

    (marker,) = [r for r in sliced.rows if r.id == made.other["forgotten"]]
    assert isinstance(marker, ForgottenFact)
    assert ([p.name for p in marker.subjects], marker.scope.name) == (["bob"], "DM with bob")
    assert marker.forgotten_at is not None
    assert marker.receipt_id is not None
    assert marker.id not in {f.id for f in sliced.facts}  # never a FactView, so never a text
    assert SECRET.casefold() not in repr(sliced).casefold()
    assert "secret" not in repr(sliced)
    about_bob = await familiar.memory.timeline(filters=TimelineFilters(subjects=(f"discord:{BOB}",)))
    assert marker.id in {r.id for r in about_bob.rows}


async def test_a_diff_between_two_recorded_times(demo: tuple[Familiar, DemoFacts]) -> None:
    familiar, made = demo
    diff = await familiar.memory.timeline_diff(
        TimelinePoint(recorded_at=ago(8)), TimelinePoint(recorded_at=ago(0.5)), limit=50
    )

    by_kind = {(c.kind, c.before.id if c.before else None, c.after.id if c.after else None): c for c in diff.changes}
    moved = by_kind[("changed", made.other["porto"], made.active["lisbon"])]
    assert [(p.op, p.text.strip()) for p in moved.diff if p.op != "same"] == [
        ("removed", "Porto."),
        ("added", "Lisbon."),
    ]
    archived = by_kind[("changed", made.other["archived"], made.other["archived"])]
    assert archived.before is not None
    assert archived.after is not None
    assert (archived.before.status, archived.after.status) == ("active", "archived")
    assert ("added", None, made.active["pepper_age"]) in by_kind
    assert (diff.added, diff.changed) == (
        sum(c.kind == "added" for c in diff.changes),
        sum(c.kind == "changed" for c in diff.changes),
    )
    assert SECRET.casefold() not in repr(diff).casefold()


async def test_the_extent_spans_the_axes_and_names_the_filters(demo: tuple[Familiar, DemoFacts]) -> None:
    familiar, _made = demo
    extent = await familiar.memory.timeline_extent()

    assert extent.facts >= 15
    assert extent.first_recorded is not None
    assert extent.first_recorded <= ago(20.9)
    assert extent.first_world is not None
    assert extent.first_world <= ago(20.9)
    assert {p.name for p in extent.people} >= {"alice", "bob", "carol"}
    assert {p.name for p in extent.places} >= {"Lantern Club", "DM with bob"}


async def test_a_bad_filter_is_one_clear_line(demo: tuple[Familiar, DemoFacts]) -> None:
    familiar, _made = demo
    with pytest.raises(FamiliarError, match=r"^unknown status 'done': choose from pending, active"):
        await familiar.memory.timeline(status="done")
    with pytest.raises(FamiliarError, match="time zone"):
        await familiar.memory.timeline(world_at=datetime(2025, 1, 1))  # noqa: DTZ001 (naive on purpose)


async def test_names_are_reused_for_a_few_seconds_then_looked_up_again(
    demo: tuple[Familiar, DemoFacts], monkeypatch: pytest.MonkeyPatch
) -> None:
    familiar, made = demo
    lisbon = made.active["lisbon"]

    def place_of(sliced: TimelineSlice) -> str:
        return next(r.scope.name for r in sliced.rows if r.id == lisbon)

    assert place_of(await familiar.memory.timeline()) == "Lantern Club"
    await Catalog(familiar.history.store).name_places({"guild:500": "The Lantern Club"})
    assert place_of(await familiar.memory.timeline()) == "Lantern Club"  # within NAMES_SECONDS: as shown
    monkeypatch.setattr(timeline_module, "NAMES_SECONDS", 0.0)
    assert place_of(await familiar.memory.timeline()) == "The Lantern Club"


async def test_a_fact_as_recorded_then_is_refused_truthfully_when_no_slice_shows_it(
    demo: tuple[Familiar, DemoFacts],
) -> None:
    """`memory.fact(id, recorded_at=T)`: a fact recorded after T was not recorded yet; one whose forget can
    still be undone is held out of every slice (as from every read), and says so rather than "not yet"."""
    familiar, _made = demo
    made = await familiar.memory.remember("The lantern hangs by the door", "guild:500")
    fact = made.fact
    with pytest.raises(FamiliarError, match=rf"fact {fact.id} was not recorded yet at "):
        await familiar.memory.fact(fact.id, recorded_at=fact.created_at - timedelta(seconds=1))
    then = await familiar.memory.fact(fact.id, recorded_at=fact.created_at)
    assert [v.id for v in then.versions] == [fact.id]
    await familiar.memory.schedule_forget(fact.id, fact.revision, delay=600)
    with pytest.raises(FamiliarError, match=rf"fact {fact.id} is waiting to be forgotten"):
        await familiar.memory.fact(fact.id, recorded_at=fact.created_at)
