"""Reading a file the user pointed at: whole up to a size, else one line naming it and what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config.files import UnreadableFileError, read_limited


def test_a_file_is_read_whole_up_to_its_limit_and_each_refusal_is_one_line(tmp_path: Path) -> None:
    small = tmp_path / "book.json"
    small.write_bytes(b"x" * 100)
    assert read_limited(small, 100, "a lorebook") == b"x" * 100
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * (2 * 2**20 + 1))
    cases = {
        big: f"{big}: too large to be a lorebook (over 2 MB)",
        tmp_path / "nowhere.json": f"{tmp_path / 'nowhere.json'}: no such file",
        tmp_path: f"{tmp_path}: is a folder, not a file",
    }
    for path, message in cases.items():
        with pytest.raises(UnreadableFileError) as caught:
            read_limited(path, 2 * 2**20, "a lorebook")
        assert str(caught.value) == message
