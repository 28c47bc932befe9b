"""Cold start: the window's path to its first paint imports nothing it does not need to draw.

Discord, the LLM client, the search index, SQLite's async driver, the keyring and the embedding model load
after the first paint (app/bootstrap.py run_window) or on first use. Measured in bench/bench_startup.py;
here only what is imported, in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = (
    "discord",
    "openai",
    "httpx",
    "aiohttp",
    "tantivy",
    "aiosqlite",
    "fastembed",
    "onnxruntime",
    "numpy",
    "keyring",
)

_LOADED = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} | {m for m in sys.modules if m.startswith("app.")})))
"""


def _loaded_by(*modules: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run(
        [sys.executable, "-c", _LOADED, *modules], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(result.stdout))


@pytest.mark.slow
def test_the_window_path_to_the_first_paint_loads_no_runtime_client_store_or_index() -> None:
    loaded = _loaded_by("app.cli", "app.bootstrap", "app.logs", "app.runtime.api.deferred", "app.ui.main_window")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert not {m for m in loaded if m.startswith(("app.memory", "app.runtime.service"))}
    # Only what the first paint draws: the Dashboard, not the other panes, their records or the dialogs.
    panes = {m for m in loaded if m.startswith("app.ui.panes.")}
    assert panes == {"app.ui.panes.base", "app.ui.panes.dashboard"}, sorted(panes)
    assert not loaded & {"app.runtime.api.views", "app.runtime.api.setup_views", "app.ui.dialogs.settings_dialog"}


@pytest.mark.slow
def test_the_runtime_loads_discord_with_the_adapter_and_openai_on_first_use() -> None:
    loaded = _loaded_by("app.runtime.service")
    assert "discord" not in loaded
    assert "openai" not in loaded
    assert "tantivy" in loaded  # the store and its index are what opening a familiar is for
    assert "discord" in _loaded_by("app.runtime.discord.client")


_STARTS_LEARNING = """
import asyncio, sys, tempfile
from pathlib import Path
from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.service import Familiar

async def main():
    with tempfile.TemporaryDirectory() as tmp:
        paths = FamiliarPaths(root=Path(tmp) / "home", name="default")
        familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env={})
        try:
            before = "openai" in sys.modules
            await familiar.start_learning()
            await asyncio.wait_for(familiar.client_loaded(), 60)
            print(before, "openai" in sys.modules)
        finally:
            await familiar.close()

asyncio.run(main())
"""


@pytest.mark.slow
def test_starting_the_workers_loads_the_llm_client_off_the_loop_before_their_first_request() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", _STARTS_LEARNING], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    # Opening a familiar (a one-shot command does only that) leaves it alone; the workers' start loads it.
    assert result.stdout.split() == ["False", "True"], result.stderr[-2000:]
