"""A small, lived-in familiar for screenshots and pane tests: "Wisp" on the Lantern Club server.

Three weeks of conversation in two channels and a DM, what the familiar learned from it (facts active,
pending with their sources, snoozed, rejected, archived, corrected, forgotten), dossiers, a summary, a
pause and a lorebook. Everything goes through the store's own rules (no SQL), with the times set so the
timeline has something to show.

    python -m tests.demo_familiar --home /tmp/demo      # then: FAMILIAR_HOME=/tmp/demo familiar screenshot ...
    python -m tests.demo_familiar --home /tmp/demo --local-chat   # also a window's chat (the Chat screenshot)

In tests: `paths = await make_demo_familiar(tmp_path / "home")` (returns the FamiliarPaths), or
`facts = await seed_demo(familiar)` on a familiar already open. `local_chat=True` adds a chat in the window
(opened with a card-style greeting, with Discord Markdown in its replies) and the greetings to the settings;
it is left out by default, so the owner ("You") is not among the People of the other panes' screenshots.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.config.editing import set_values
from app.config.paths import FamiliarPaths, create_familiar
from app.config.secrets import SecretStore
from app.memory.catalog import Catalog
from app.memory.facts import NewFact
from app.memory.records import OWNER_KEY, NewTurn
from app.runtime.context.layers import DEFAULT_ORDER
from app.runtime.local_chat import GREETING_MODE
from app.runtime.names import LOCAL_PLACE
from app.runtime.service import Familiar

GUILD = 500
GENERAL = 501
HOME = 502
ALICE, BOB, CAROL = 7001, 7002, 7003
GENERAL_PLACE = f"guild:{GUILD}/{GENERAL}"
HOME_PLACE = f"guild:{GUILD}/{HOME}"
BOB_DM = f"dm:{BOB}"
PEOPLE = {ALICE: "alice", BOB: "bob", CAROL: "carol"}
SELF = "familiar:self"

LORE = """# Wisp's lorebook: what is true in the Lantern Club's world.

[[entries]]
title = "The lighthouse"
keys = ["lighthouse", "lamp room"]
content = "The old lighthouse on Gull Point has been dark since the storm of '98; the lamp room is locked."
priority = 20

[[entries]]
title = "Harbour market"
keys = ["market", "harbour"]
secondary_keys = ["saturday", "fish"]
logic = "and_any"
content = "The harbour market runs on Saturdays from dawn until the fish run out, usually by ten."
priority = 10

[[entries]]
title = "Wisp"
keys = ["wisp"]
constant = true
content = "Wisp is a lantern spirit who remembers everyone who has ever lit a candle in the club."
priority = 50

[[entries]]
title = "The cello"
keys = ["/cell(o|ist)s?/i"]
content = "Carol plays the cello, badly but bravely; the neighbours have started requesting songs."
priority = 5
sticky = 2

[[entries]]
title = "The Gull Point inn"
keys = ["inn", "gull point"]
whole_words = false
content = "The Gull Point inn serves chowder on Fridays and keeps a spare lantern behind the bar."
priority = 5

[[entries]]
title = "Old ferry timetable"
keys = ["ferry"]
enabled = false
content = "The ferry to the islands ran twice a day until the pier closed last spring."
priority = 1
"""

# (days ago, place, speaker id or None for the familiar, text)
CONVERSATION: tuple[tuple[float, str, int | None, str], ...] = (
    (21.0, GENERAL_PLACE, ALICE, "Morning all! I finally moved to Porto, the flat has a view of the river."),
    (21.0, GENERAL_PLACE, None, "Welcome to Porto, alice! A river view is a fine thing to wake up to."),
    (20.5, GENERAL_PLACE, BOB, "Anyone up for the harbour market on Saturday? I need fresh sardines."),
    (20.4, GENERAL_PLACE, CAROL, "Count me in. I am vegetarian though, so I will be at the bread stall."),
    (18.0, HOME_PLACE, ALICE, "@Wisp can you remind people that the book club meets on the first Friday?"),
    (18.0, HOME_PLACE, None, "Of course. The book club meets on the first Friday of each month."),
    (15.2, GENERAL_PLACE, BOB, "My cat Pepper knocked the lantern off the shelf again."),
    (15.1, GENERAL_PLACE, ALICE, "Pepper is a menace. Is the lantern all right?"),
    (12.0, BOB_DM, BOB, "Between us: I am planning a surprise party for carol on the 14th."),
    (12.0, BOB_DM, None, "Your secret is safe with me, bob."),
    (9.3, GENERAL_PLACE, CAROL, "I started learning the cello this week. My neighbours are very patient."),
    (7.0, GENERAL_PLACE, ALICE, "Big news: I am moving again, to Lisbon this time, for the new job."),
    (7.0, GENERAL_PLACE, None, "Lisbon! Congratulations on the new job, alice."),
    (5.5, HOME_PLACE, BOB, "From now on, always call me Captain Bob in this channel."),
    (4.0, GENERAL_PLACE, CAROL, "The old lighthouse looked eerie in the fog last night."),
    (3.0, GENERAL_PLACE, BOB, "Pepper is fourteen now and still climbs the curtains."),
    (2.0, GENERAL_PLACE, ALICE, "I prefer green tea in the mornings, black coffee after lunch."),
    (1.0, HOME_PLACE, CAROL, "Reminder: the club's annual lantern walk is on the 21st of next month."),
    (0.2, GENERAL_PLACE, BOB, "Does anyone know a good vet near the harbour? Pepper has a cough."),
)


@dataclass(slots=True)
class DemoFacts:
    """Ids of the facts `seed_demo` made, by what they show."""

    active: dict[str, int] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)
    other: dict[str, int] = field(default_factory=dict)
    turns: dict[str, int] = field(default_factory=dict)


def _key(user: int) -> str:
    return f"discord:{user}"


async def seed_demo(familiar: Familiar, *, now: datetime | None = None, local_chat: bool = False) -> DemoFacts:
    """Fill an empty, open familiar with the demo world (see the module docstring)."""
    now = now or datetime.now(UTC)
    history = familiar.history
    book = history
    made = DemoFacts()
    await Catalog(history.store).name_places(
        {
            f"guild:{GUILD}": "Lantern Club",
            GENERAL_PLACE: "general",
            HOME_PLACE: "familiar-home",
        }
    )
    turn_ids: list[int] = []
    for n, (days, place, speaker, text) in enumerate(CONVERSATION):
        at = now - timedelta(days=days)
        guild = GUILD if place.startswith("guild:") else None
        channel = int(place.rsplit("/", 1)[1]) if guild else 900 + BOB
        turn = await history.append_turn(
            NewTurn(
                platform="discord",
                place=place,
                guild_id=guild,
                channel_id=channel,
                message_id=10_000 + n,
                author_key=_key(speaker) if speaker else SELF,
                author_name=PEOPLE[speaker] if speaker else "Wisp",
                content=text,
                created_at=at,
                reply_to=10_000 + n - 1 if speaker is None else None,
            )
        )
        assert turn is not None
        turn_ids.append(turn.id)
    made.turns = {"porto": turn_ids[0], "lisbon": turn_ids[11], "vet": turn_ids[18]}

    async def fact(
        name: str,
        text: str,
        *,
        days: float,
        source: int,
        subjects: tuple[int, ...],
        kind: str = "episodic",
        confidence: float = 0.9,
        importance: int = 5,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
    ) -> int:
        _days, place, speaker, _text = CONVERSATION[source]
        outcome, _changes = await book.intake.insert(
            NewFact(
                content=text,
                type=kind,
                importance=importance,
                confidence=confidence,
                subjects=tuple(_key(s) for s in subjects),
                place=place,
                speaker=_key(speaker) if speaker else SELF,
                source_turn_ids=(turn_ids[source],),
                valid_from=valid_from,
                valid_to=valid_to,
            ),
            now=now - timedelta(days=days),
        )
        assert outcome.fact is not None, (name, outcome.outcome)
        return outcome.fact.id

    # Active at once (certain, ordinary events) or accepted by the owner later.
    porto = await fact(
        "porto", "alice lives in Porto.", days=21, source=0, subjects=(ALICE,), valid_from=now - timedelta(days=21)
    )
    made.active["market"] = await fact(
        "market", "bob buys sardines at the harbour market on Saturdays.", days=20.5, source=2, subjects=(BOB,)
    )
    made.active["pepper"] = await fact(
        "pepper", "bob has a cat called Pepper.", days=15.2, source=6, subjects=(BOB,), importance=6
    )
    vegetarian = await fact(
        "vegetarian", "carol is vegetarian.", days=20.4, source=3, subjects=(CAROL,), kind="semantic", importance=7
    )
    fact_view = await book.facts.get(vegetarian)
    assert fact_view is not None
    await book.decisions.decide(vegetarian, fact_view.revision, "accept", now=now - timedelta(days=19))
    made.active["vegetarian"] = vegetarian
    book_club = await fact(
        "book_club",
        "The book club meets on the first Friday of each month.",
        days=18,
        source=4,
        subjects=(),
        kind="procedural",
    )
    club = await book.facts.get(book_club)
    assert club is not None
    await book.decisions.decide(book_club, club.revision, "accept", now=now - timedelta(days=17))
    made.active["book_club"] = book_club
    # A correction: Porto until a week ago, Lisbon since (world time), recorded as a new version.
    lisbon = await fact(
        "lisbon", "alice lives in Lisbon.", days=7, source=11, subjects=(ALICE,), valid_from=now - timedelta(days=7)
    )
    await book.corrections.supersede(porto, lisbon, now=now - timedelta(days=6.9))
    made.active["lisbon"], made.other["porto"] = lisbon, porto
    made.active["pepper_age"] = await fact(
        "pepper_age", "bob's cat Pepper is fourteen years old.", days=3, source=15, subjects=(BOB,)
    )

    # The owner's queue: what waits for a decision, oldest first.
    made.pending["surprise"] = await fact(
        "surprise",
        "bob is planning a surprise party for carol on the 14th.",
        days=12,
        source=8,
        subjects=(BOB, CAROL),
        kind="semantic",
        confidence=0.8,
        importance=8,
    )
    made.pending["cello"] = await fact(
        "cello", "carol is learning the cello.", days=9.3, source=10, subjects=(CAROL,), kind="semantic"
    )
    made.pending["captain"] = await fact(
        "captain",
        "Always call bob 'Captain Bob' in #familiar-home.",
        days=5.5,
        source=13,
        subjects=(BOB,),
        kind="procedural",
        confidence=0.7,
    )
    made.pending["tea"] = await fact(
        "tea", "alice prefers green tea in the mornings.", days=2, source=16, subjects=(ALICE,), kind="semantic"
    )
    made.pending["pepper_dup"] = await fact(
        "pepper_dup",
        "bob's cat Pepper is 14 and climbs curtains.",
        days=3,
        source=15,
        subjects=(BOB,),
        kind="semantic",
        confidence=0.6,
    )
    made.pending["walk"] = await fact(
        "walk",
        "The club's annual lantern walk is on the 21st of next month.",
        days=1,
        source=17,
        subjects=(),
        kind="semantic",
        importance=6,
    )
    made.pending["vet"] = await fact(
        "vet", "bob's cat Pepper has a cough.", days=0.2, source=18, subjects=(BOB,), kind="semantic", confidence=0.75
    )

    # Decisions of other kinds, for the timeline and the memory pane.
    lighthouse = await fact(
        "lighthouse", "carol saw the old lighthouse in the fog.", days=4, source=14, subjects=(CAROL,), confidence=0.6
    )
    seen = await book.facts.get(lighthouse)
    assert seen is not None
    if seen.status == "pending":
        await book.decisions.decide(lighthouse, seen.revision, "reject", now=now - timedelta(days=3.5))
    made.other["rejected"] = lighthouse
    snoozed = made.pending.pop("walk")
    walk = await book.facts.get(snoozed)
    assert walk is not None
    await book.decisions.decide(
        snoozed, walk.revision, "snooze", until=now + timedelta(days=2), now=now - timedelta(hours=20)
    )
    made.other["snoozed"] = snoozed
    market = await book.facts.get(made.active["market"])
    assert market is not None
    await book.decisions.decide(market.id, market.revision, "archive", now=now - timedelta(days=1))
    made.other["archived"] = made.active.pop("market")
    # Forgotten by the owner: a tombstone and a receipt, no text.
    secret = await fact(
        "secret", "bob told Wisp a secret in a DM.", days=12, source=9, subjects=(BOB,), confidence=0.85
    )
    await familiar.memory.forget(secret)
    made.other["forgotten"] = secret
    # Two notes of the owner's with a start and an end in the world, so the timeline has bars that stop
    # (one over, one still to come). About no one: nobody's dossier or fact count changes with them.
    for name, text, start, end in (
        ("festival", "The lighthouse was open to visitors for the autumn festival.", 16.0, 13.0),
        ("market_closed", "The harbour market is closed for repairs until next Saturday.", 2.0, -5.0),
    ):
        noted, _changes = await book.intake.insert(
            NewFact(
                content=text,
                type="episodic",
                importance=5,
                confidence=1.0,
                subjects=(),
                place=f"guild:{GUILD}",
                speaker="local:owner",
                valid_from=now - timedelta(days=start),
                valid_to=now - timedelta(days=end),
                origin="remember",
            ),
            now=now - timedelta(days=start + 0.5),
        )
        assert noted.fact is not None, (name, noted.outcome)
        made.active[name] = noted.fact.id

    # What the memory workers would have written: a summary, dossiers.
    projections = familiar.projections
    await projections.save_summary(
        GENERAL_PLACE,
        "Regulars swap news: alice moved from Porto to Lisbon for a new job, bob's old cat Pepper keeps getting"
        " into trouble, carol took up the cello. The harbour market on Saturdays is a shared ritual.",
        turn_ids[-1],
        watermark_name="rolling_summary",
    )
    await projections.save_dossier(
        _key(ALICE), f"guild:{GUILD}", "alice: moved from Porto to Lisbon for a new job; a morning tea drinker.", lisbon
    )
    await projections.save_dossier(
        _key(BOB),
        f"guild:{GUILD}",
        "bob: owns Pepper, a fourteen-year-old cat; shops at the harbour market.",
        made.active["pepper_age"],
    )
    # A dossier for a DM (recalled only there), beside the server's.
    await projections.save_dossier(
        _key(BOB),
        BOB_DM,
        "bob (in DMs): trusts Wisp with secrets; is planning something for carol.",
        made.pending["surprise"],
    )
    await familiar.controls.pause("learning", HOME_PLACE)
    familiar.home.joinpath("lorebook.toml").write_text(LORE, encoding="utf-8")
    await history.catch_up()
    if local_chat:  # before the explained replies: theirs stay the newest explanations
        made.turns.update(await _local_chat(familiar, now))
    made.turns.update(await _explained_replies(familiar, now))
    return made


# The window's chat: (minutes ago, the owner's words, or None for the familiar), opened with the greeting.
GREETING = "*The lantern on the shelf flickers awake.* Oh! It's you. Come in, and mind the **wax** on the floor."
ALTERNATE_GREETINGS = ("*A moth circles the lamp.* Late again? The kettle is still warm.",)
LOCAL_CHAT: tuple[tuple[float, str | None, str], ...] = (
    (42.0, None, GREETING),
    (41.0, "You", "Evening, Wisp. Anything happen at the club today?"),
    (
        40.8,
        None,
        "Plenty! Bob's cat **Pepper** knocked the lantern off the shelf *again*. And carol said of the lighthouse:\n"
        "> the lamp room is still locked, and nobody knows who has the key\n"
        "About the 14th: ||it's a surprise party for carol, so not a word||.",
    ),
    (39.0, "You", "Ha. Can you write the lantern walk as a reminder I can paste?"),
    (
        38.7,
        None,
        'Here you go:\n```\n/remind #familiar-home "Lantern walk" on the 21st at 19:00\n```\n'
        "Paste it in `#familiar-home` and I will do the rest. __Bring a spare candle__, the wind on ~~Gull Point~~"
        " the pier is wicked.",
    ),
)


async def _local_chat(familiar: Familiar, now: datetime) -> dict[str, int]:
    """The window's chat of LOCAL_CHAT, each reply with the explanation a real assembly recorded for it; the
    greetings in character.toml and card.json, as a card would have brought them."""
    set_values(familiar.paths.character_toml, {"familiar.greeting": GREETING})
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Wisp", "first_mes": GREETING}}
    card["data"]["alternate_greetings"] = list(ALTERNATE_GREETINGS)
    familiar.home.joinpath("card.json").write_text(json.dumps(card, indent=4) + "\n", encoding="utf-8")
    await familiar.reconfigure()
    answering = None
    made: dict[str, int] = {}
    for minutes, owner, text in LOCAL_CHAT:
        turn = await familiar.history.append_turn(
            NewTurn(
                platform="local",
                place=LOCAL_PLACE,
                channel_id=0,
                author_key=OWNER_KEY if owner else SELF,
                author_name=owner or "Wisp",
                content=text,
                created_at=now - timedelta(minutes=minutes),
                mode=GREETING_MODE if text == GREETING else "text",
            )
        )
        assert turn is not None
        if owner is not None or text == GREETING:
            answering = turn if owner is not None else None
            continue
        assert answering is not None
        assembly = await familiar.replies.assemble(LOCAL_PLACE, answering)
        await familiar.explanations.save(LOCAL_PLACE, assembly.explanation, [turn.id])
        made["local_reply"] = turn.id
    return made


# Two replies in #general with what went into them, for the "Why did it say that" pane: (days ago,
# speaker id or None for the familiar, text); a reply answers the message before it.
EXPLAINED: tuple[tuple[float, int | None, str], ...] = (
    (0.19, None, "Dr Sousa by the harbour market is good with old cats; Saturday mornings are quietest there."),
    (0.1, CAROL, "Wisp, is the lamp room in the old lighthouse still locked? I want to see it before the walk."),
    (0.09, None, "Still locked since the storm of '98, carol. Ask at the harbour market on Saturday for the key."),
)


async def _explained_replies(familiar: Familiar, now: datetime) -> dict[str, int]:
    """The replies of EXPLAINED, each with the explanation a real assembly recorded for it: on a tight
    tier (two lorebook entries at most), so the newest one shows lore that matched but was dropped."""
    answering = await familiar.history.store.latest_revision("discord", 10_000 + len(CONVERSATION) - 1)
    assert answering is not None
    made: dict[str, int] = {}
    for n, (days, speaker, text) in enumerate(EXPLAINED):
        message_id = 20_000 + n
        turn = await familiar.history.append_turn(
            NewTurn(
                platform="discord",
                place=GENERAL_PLACE,
                guild_id=GUILD,
                channel_id=GENERAL,
                message_id=message_id,
                author_key=_key(speaker) if speaker else SELF,
                author_name=PEOPLE[speaker] if speaker else "Wisp",
                content=text,
                created_at=now - timedelta(days=days),
                reply_to=answering.message_id if speaker is None else None,
            )
        )
        assert turn is not None
        if speaker is not None:
            answering = turn
            continue
        context = await familiar.replies.context_for(GENERAL_PLACE, answering)
        tight = replace(context, budget=replace(context.budget, max_lorebook_entries=2))
        assembly = await familiar._parts.assembler.assemble(tight, DEFAULT_ORDER)
        await familiar.explanations.save(GENERAL_PLACE, assembly.explanation, [turn.id])
        made["vet_reply" if not made else "lighthouse_reply"] = turn.id
    await familiar.history.catch_up()
    return made


async def make_demo_familiar(home: Path, name: str = "default", *, local_chat: bool = False) -> FamiliarPaths:
    """A demo familiar on disk under `home` (FAMILIAR_HOME); returns its paths."""
    paths = FamiliarPaths(root=home, name=name)
    create_familiar(paths)
    familiar = await Familiar.open(paths, SecretStore(name, paths.secrets_file, use_keyring=False), env={})
    try:
        await seed_demo(familiar, local_chat=local_chat)
    finally:
        await familiar.close()
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description="Create the demo familiar (for screenshots) under --home.")
    parser.add_argument("--home", type=Path, required=True, help="the data root (FAMILIAR_HOME) to create it in")
    parser.add_argument("--name", default="default")
    parser.add_argument("--local-chat", action="store_true", help="with a chat in the window (the Chat screenshot)")
    args = parser.parse_args()
    paths = asyncio.run(make_demo_familiar(args.home, args.name, local_chat=args.local_chat))
    print(f"demo familiar in {paths.folder}: FAMILIAR_HOME={args.home} familiar --pane pending")  # noqa: T201


if __name__ == "__main__":
    main()
