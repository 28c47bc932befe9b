"""A password in the LLM endpoint's address (`http://user:PASSWORD@host/v1`, as some proxies need) is in no
file Familiar writes and on no line of its terminal, and still reaches the proxy (issue 19, item 4).

A real `familiar run --headless` and real commands beside it, against the fake Discord and a fake LLM
that wants the user and password (HTTP basic authorization); the endpoint comes from the environment,
so no file under the data root holds the password unless Familiar wrote it there.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest

from app.config.paths import FamiliarPaths
from tests.conftest import ALICE, GENERAL, GUILD_ID, write_character_toml
from tests.e2e.test_headless import REPO, Headless, _env
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM, ScriptedReply

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

PASSWORD = "S3CRETPASS"


async def _process(home: Path, url: str, *args: str) -> asyncio.subprocess.Process:
    env = _env(home) | {"FAMILIAR_LLM_BASE_URL": url}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app",
        *args,
        env=env,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _cli(home: Path, url: str, *args: str) -> tuple[int, str, str]:
    process = await _process(home, url, *args)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def _files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes())


async def test_a_password_in_the_endpoint_is_in_no_file_and_on_no_terminal_line(
    tmp_path: Path, fake_discord: FakeDiscord
) -> None:
    async with FakeLLM(basic_auth=("user", PASSWORD)) as proxy:
        home = tmp_path / "home"
        paths = FamiliarPaths(root=home, name="default")
        write_character_toml(paths, fake_discord.api_base, fake_discord.gateway_url, "http://127.0.0.1:9/v1")
        url = proxy.base_url.replace("http://", f"http://user:{PASSWORD}@")
        shown = proxy.base_url.replace("http://", "http://[redacted]@")
        headless = Headless(await _process(home, url, "run", "--headless"))
        said: list[str] = []
        try:
            await headless.wait_for_line("is running", timeout=30)
            # A reply: the proxy took the password (sent as basic authorization).
            await fake_discord.send_message(
                channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="lantern?", mentions_bot=True
            )
            [reply] = await fake_discord.wait_for_posted(1, timeout=20)
            assert reply.content == "echo: alice: lantern?"
            await headless.wait_for_line("INFO familiar: reply_out", timeout=20)
            # An error, naming the endpoint.
            proxy.script(*[ScriptedReply(status=500)] * 3)
            await fake_discord.send_message(
                channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="again?", mentions_bot=True
            )
            failed = await headless.wait_for_line("answered with an error 500", timeout=20)
            assert shown in failed
            # Commands beside it, with the same environment.
            code, out, err = await _cli(home, url, "turns", "search", "echo", "--json")
            assert code == 0, err
            said += [out, err]
            turn_id = next(h["turn_id"] for h in json.loads(out)["hits"] if h["content"].startswith("echo:"))
            for command in (("explain", str(turn_id)), ("memory", "status"), ("index", "status")):
                code, out, err = await _cli(home, url, *command)
                assert code == 0, (command, err)
                said += [out, err]
            headless.process.send_signal(signal.SIGTERM)
            assert await headless.wait(timeout=30) == 0
        finally:
            if headless.process.returncode is None:
                headless.process.kill()
                await headless.wait()
        expected = "Basic dXNlcjpTM0NSRVRQQVNT"  # user:S3CRETPASS
        assert {r.headers.get("Authorization") for r in proxy.requests} == {expected}

    console = "\n".join(headless.lines)
    assert f"at {shown} answered in" in console  # the start line names the endpoint, without its password
    assert PASSWORD not in console
    assert not [text for text in said if PASSWORD in text]
    log = (home / "logs" / "familiar.log").read_text(encoding="utf-8")
    assert "HTTP Request: POST http://127.0.0.1:" in log  # the request lines are there, without it
    # Every file under the data root, the log folder (<root>/logs) included.
    assert _files_holding(home, PASSWORD.encode()) == []
