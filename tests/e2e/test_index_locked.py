"""The index folders locked at start-up, through the real entry point (issue 8, item 3), and CJK words
through `turns search` and `recall` (item 7).

`chattr +i` makes a folder refuse every change, root included; where the filesystem cannot, the
tests that need it are skipped.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from app.memory.fts import FACTS, TURNS, FtsIndex
from tests.conftest import ALICE, GENERAL, GUILD_ID, write_character_toml
from tests.e2e.cli import Cli
from tests.e2e.test_headless import _cli, _start
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM
from tests.memory.test_fts import _immutable

WHERE = "guild:500/501"


@contextmanager
def immutable(*paths: Path) -> Iterator[list[Path]]:
    """chattr +i on each path (skips where the filesystem cannot); undone on the way out unless the
    caller lifted it already (it then empties the list)."""
    done: list[Path] = []
    try:
        for path in paths:
            if not _immutable(path, True):
                pytest.skip("chattr +i is not available on this filesystem")
            done.append(path)
        yield done
    finally:
        for path in done:
            _immutable(path, False)


def lift(done: list[Path]) -> None:
    for path in done:
        assert _immutable(path, False)
    done.clear()


# -- the one-shot commands -------------------------------------------------------------------------------


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(tmp_path / "home", capsys, monkeypatch)


def _fts(cli: Cli) -> Path:
    return cli.home / "familiars" / "default" / "fts"


def test_forget_with_the_index_folder_locked_succeeds_and_says_where_the_text_stands(cli: Cli) -> None:
    """It crashed with a traceback (PermissionError deleting the folder it took for corrupt)."""
    made = cli.json("facts", "remember", "Bob's locker code is 4417", "--where", "dm:7002", "--subject", "discord:7002")
    cli.json("recall", "locker", "--where", "dm:7002")  # the facts index holds it
    fts = _fts(cli)
    db = sqlite3.connect(fts.parent / "history.db")
    with db:  # what a one-shot command used to leave behind: a rebuild that never finished
        db.execute("UPDATE index_state SET rebuilding = 1")
    db.close()
    with immutable(fts / "facts", fts / "turns") as locked:
        code, out, err = cli.run("forget", str(made["fact"]["id"]), "--json")
        assert code == 0, err
        assert "Traceback" not in err
        receipt = json.loads(out)
        assert receipt["fact_ids"] == [made["fact"]["id"]]
        assert receipt["index_files"] == {"facts": "pending: the index is locked"}
        # Out of every search at once (results are checked against SQL), though the index still holds it.
        assert cli.json("recall", "locker", "--where", "dm:7002")["facts"] == []
        status = {h["name"]: h for h in cli.json("index", "status")["indexes"]}
        assert status["facts"]["pending_to_remove"] == 1
        lift(locked)
    # Free again: the next command that writes the index drops the text from its files.
    cli.json("turns", "search", "anything")
    index = FtsIndex(fts / FACTS.name, FACTS)
    assert index.open(writable=False) == "opened"
    try:
        assert index.search("locker", 5) == []
        assert index.search("4417", 5) == []
    finally:
        index.close()


def test_forget_text_output_names_the_locked_index(cli: Cli) -> None:
    made = cli.json("facts", "remember", "The vault code is 9921", "--where", "dm:7002")
    cli.json("recall", "vault", "--where", "dm:7002")
    fts = _fts(cli)
    with immutable(fts / "facts"):
        code, out, err = cli.run("forget", str(made["fact"]["id"]))
    assert code == 0, err
    assert "index files of facts: not yet: the index is locked" in out
    assert "the facts search index is locked" in out


def test_turns_search_and_recall_find_cjk_words(cli: Cli, tmp_path: Path) -> None:
    """`turns search 会議` and `recall 東京` found nothing unless given the whole sentence."""
    from app.config.secrets import SecretStore
    from app.memory.records import NewTurn
    from app.runtime.service import Familiar

    async def seed() -> None:
        paths = FamiliarPaths(root=cli.home, name="default")
        familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False))
        try:
            for n, text in enumerate(
                [
                    "明日の会議は東京本社で午後三時から",
                    "我们下周在北京开会",
                    "내일 서울에서 회의가 있습니다",
                    "a plain lantern",
                ]
            ):
                await familiar.history.append_turn(
                    NewTurn(
                        platform="discord", place=WHERE, guild_id=500, channel_id=501, message_id=100 + n,
                        author_key="discord:7001", author_name="Alice", content=text, created_at=_now(),
                    )
                )  # fmt: skip
        finally:
            await familiar.close()

    cli.json("facts", "remember", "アリスは東京に住んでいる", "--where", WHERE)
    cli.json("facts", "remember", "鲍勃在北京工作", "--where", WHERE)
    asyncio.run(seed())
    for query, expected in (
        ("会議", "明日の会議は東京本社で午後三時から"),
        ("北京", "我们下周在北京开会"),
        ("서울", "내일 서울에서 회의가 있습니다"),
    ):
        hits = cli.json("turns", "search", query)["hits"]
        assert [h["content"] for h in hits] == [expected], query
    assert [f["content"] for f in cli.json("recall", "東京", "--where", WHERE)["facts"]] == ["アリスは東京に住んでいる"]
    assert [f["content"] for f in cli.json("recall", "北京", "--where", WHERE)["facts"]] == ["鲍勃在北京工作"]
    code, out, _err = cli.run("turns", "search", "会議")
    assert code == 0
    assert "明日の会議は東京本社で午後三時から" in out


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


# -- headless: locked at start-up, keeps running, answers, heals -----------------------------------------


@pytest_asyncio.fixture
async def home(tmp_path: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM) -> AsyncIterator[Path]:
    root = tmp_path / "home"
    write_character_toml(
        FamiliarPaths(root=root, name="default"), fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url
    )
    yield root


async def _status(home: Path) -> dict[str, Any]:
    code, out, err = await _cli(home, "index", "status", "--json")
    assert code == 0, err
    return {h["name"]: h for h in json.loads(out)["indexes"]}


async def _until(check: Any, timeout: float, what: str) -> Any:
    async def poll() -> Any:
        while True:
            found = await check()
            if found:
                return found
            await asyncio.sleep(0.2)

    try:
        return await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


@pytest.mark.slow
@pytest.mark.asyncio
async def test_headless_start_with_the_index_folder_locked_keeps_running_answers_and_heals(
    home: Path, fake_discord: FakeDiscord
) -> None:
    code, _out, err = await _cli(home, "facts", "remember", "Alice keeps a lantern", "--where", WHERE)
    assert code == 0, err
    code, _out, err = await _cli(home, "turns", "search", "lantern")  # both indexes exist and are caught up
    assert code == 0, err
    fts = home / "familiars" / "default" / "fts"
    db = sqlite3.connect(fts.parent / "history.db")
    with db:  # the rebuild flag a one-shot command used to leave: the old code then tried to wipe the folder
        db.execute("UPDATE index_state SET rebuilding = 1 WHERE name = 'turns'")
    db.close()
    with immutable(fts / TURNS.name, fts / FACTS.name) as locked:
        process = await _start(home)
        try:
            await process.wait_for_line("is running", timeout=30)
            await fake_discord.send_message(
                channel_id=GENERAL,
                guild_id=GUILD_ID,
                author_id=ALICE,
                content="where is the zeppelin?",
                mentions_bot=True,
            )
            await fake_discord.wait_for_posted(1, timeout=20)
            await process.wait_for_line("INFO familiar: reply_out", timeout=20)
            await _until(lambda: _locked(home), 30, "the index health to say the turns index is locked")
            # The CLI beside it finds the new message: the store adds what the locked index lacks.
            code, out, err = await _cli(home, "turns", "search", "zeppelin", "--json")
            assert code == 0, err
            assert "where is the zeppelin?" in [h["content"] for h in json.loads(out)["hits"]]
            code, out, err = await _cli(home, "index", "status")
            assert code == 0, err
            assert "turns: locked, retrying (attempt " in out
            lift(locked)
            healed = await _until(lambda: _healed(home), 60, "the index to heal")
            assert healed["turns"]["lag"] == 0
            index = FtsIndex(fts / TURNS.name, TURNS)
            assert index.open(writable=False) == "opened"
            try:
                assert len(index.search("zeppelin", 10)) == 2  # the message and the familiar's echo of it
            finally:
                index.close()
            assert process.process.returncode is None, "it kept running"
        finally:
            if process.process.returncode is None:
                process.process.send_signal(signal.SIGTERM)
            code = await process.wait(timeout=30)
    assert code == 0
    assert not any("Traceback" in line for line in process.lines), process.lines
    assert any("index turns is locked" in line for line in process.lines)
    assert any("the lock is gone" in line for line in process.lines)


async def _locked(home: Path) -> bool:
    return bool((await _status(home))["turns"]["state"] == "locked")


async def _healed(home: Path) -> dict[str, Any] | None:
    status = await _status(home)
    ready = all(h["state"] == "ready" and h["lag"] == 0 for h in status.values())
    return status if ready else None


def _holder_attempts(home: Path, pid: int) -> int:
    """The attempt the process `pid` is on at its locked turns index, as its log lines say."""
    log = (home / "logs" / "familiar.log").read_text(encoding="utf-8")
    attempts = [0]
    for line in log.splitlines():
        if f" {pid} " not in line:
            continue
        if "index turns is locked (" in line:
            attempts.append(1)
        elif found := re.search(r"index turns still locked \(attempt (\d+)\)", line):
            attempts.append(int(found.group(1)))
    return max(attempts)


@pytest.mark.slow
@pytest.mark.asyncio
async def test_index_status_beside_a_familiar_whose_index_is_locked_says_locked_and_the_attempt_it_is_on(
    home: Path, fake_discord: FakeDiscord
) -> None:
    """Issue 19, item 6: `familiar index status` printed `closed` and `locked_attempts: 0` while the familiar
    beside it was locked and retrying: the writer shared its health in a file inside the folder the lock
    refused, so a reader found what the last command had left there when it closed."""
    code, _out, err = await _cli(home, "facts", "remember", "Alice keeps a lantern", "--where", WHERE)
    assert code == 0, err
    code, _out, err = await _cli(home, "turns", "search", "lantern")  # both indexes exist, then "closed"
    assert code == 0, err
    fts = home / "familiars" / "default" / "fts"
    with immutable(fts / TURNS.name, fts / FACTS.name, fts) as locked:  # the index folders refuse every write
        process = await _start(home)
        try:
            await process.wait_for_line("is running", timeout=30)
            await fake_discord.send_message(
                channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="a zeppelin!", mentions_bot=True
            )
            await process.wait_for_line("index turns is locked", timeout=30)
            pid = process.process.pid
            await _until(lambda: _locked(home), 30, "the index status to say the turns index is locked")
            for _ in range(2):  # and again, once the holder has tried more
                before = _holder_attempts(home, pid)
                turns = (await _status(home))["turns"]
                code, out, err = await _cli(home, "index", "status")
                after = _holder_attempts(home, pid)
                assert code == 0, err
                assert turns["state"] == "locked"
                assert before <= turns["locked_attempts"] <= after, (before, turns, after)
                line = next(line for line in out.splitlines() if line.startswith("turns: "))
                shown = re.match(r"turns: locked, retrying \(attempt (\d+)\), last error: ", line)
                assert shown is not None, line
                assert before <= int(shown.group(1)) <= after, (before, line, after)
                await asyncio.sleep(2.5)
            assert after >= 2
            lift(locked)
            await _until(lambda: _healed(home), 60, "the index to heal")
        finally:
            if process.process.returncode is None:
                process.process.send_signal(signal.SIGTERM)
            code = await process.wait(timeout=30)
    assert code == 0
