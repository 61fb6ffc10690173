"""LineReader against the obvious model (``bytes.split``), over small chunks so every
boundary case (a line across chunks, a cut line, a missing final newline) is met."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crank.tools.lines import LineReader
from crank.tools.matching import _normalise

DATA = st.binary(max_size=200).map(lambda b: bytes(b"ab\n\r"[x % 4] for x in b))
CHUNK = st.integers(min_value=1, max_value=9)


def model_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        lines.pop()
    return lines


@given(DATA, CHUNK, st.integers(min_value=1, max_value=12))
def test_read_line_gives_every_line_cut_to_the_cap(data: bytes, chunk: int, cap: int) -> None:
    reader = LineReader(io.BytesIO(data), chunk=chunk)
    got = []
    while (line := reader.read_line(cap)) is not None:
        got.append((line.data, line.cut))
    assert got == [(line[:cap], len(line) > cap) for line in model_lines(data)]


@given(DATA, CHUNK, st.integers(min_value=0, max_value=40), st.integers(min_value=1, max_value=5))
def test_skip_then_read_then_count(data: bytes, chunk: int, skip: int, cap: int) -> None:
    lines = model_lines(data)
    reader = LineReader(io.BytesIO(data), chunk=chunk)
    assert reader.skip_lines(skip) == min(skip, len(lines))
    line = reader.read_line(cap, skip_rest=False)
    rest = lines[skip:]
    if not rest:
        assert line is None
        return
    assert line is not None and line.data == rest[0][:cap]
    assert reader.count_lines(10_000) == len(rest) - (0 if line.cut else 1)


@given(DATA, CHUNK, st.integers(min_value=1, max_value=12))
def test_blocks_hold_whole_lines_or_one_cut_line(data: bytes, chunk: int, size: int) -> None:
    reader = LineReader(io.BytesIO(data), chunk=chunk)
    lines: list[bytes] = []
    count = 0
    while (block := reader.read_block(size)) is not None:
        assert len(block.data) <= size
        count += block.line_count()
        if block.cut:
            lines.append(block.data)
        else:
            lines.extend(model_lines(block.data))
    expected = model_lines(data)
    assert count == len(expected)
    assert lines == [line if len(line) <= size else line[:size] for line in expected]


def test_count_gives_up_past_its_budget() -> None:
    reader = LineReader(io.BytesIO(b"x\n" * 1000), chunk=64)
    assert reader.count_lines(100) is None


def _naive_positions(text: str) -> list[int]:
    """The per-character map the tolerant match used to build (one int a character)."""
    where: list[int] = []
    position = 0
    for line in text.split("\n"):
        kept = line.rstrip()
        where.extend(range(position, position + len(kept)))
        position += len(line)
        where.append(position)
        position += 1
    where.pop()
    return where


@given(st.text(alphabet="ab \t\n\u2019\u00a0", max_size=60))
def test_tolerant_positions_match_the_per_character_map(text: str) -> None:
    folded, where = _normalise(text)
    naive = _naive_positions(text)
    assert len(folded) == len(naive)
    assert [where[i] for i in range(len(folded))] == naive


class _Tally:
    """A file handle that counts the bytes read through it; ``dense`` cannot seek, so
    the reader reads every byte, holes too (the reading the answers must match)."""

    def __init__(self, handle: io.BufferedReader, *, dense: bool = False) -> None:
        self.handle = handle
        self.dense = dense
        self.read_bytes = 0

    def read(self, size: int) -> bytes:
        data = self.handle.read(size)
        self.read_bytes += len(data)
        return data

    def tell(self) -> int:
        return self.handle.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        if self.dense:
            raise io.UnsupportedOperation("seek")
        return self.handle.seek(offset, whence)


HOLE = 256 * 1024 * 1024


def _sparse_with_lines(path: Path) -> Path:
    """Two lines, a 256 MB hole (NULs when read, no disk), then two more lines."""
    with open(path, "wb") as handle:
        handle.write(b"one\ntwo\n")
        handle.seek(HOLE, os.SEEK_CUR)
        handle.write(b"three\nfour")
    if path.stat().st_blocks * 512 >= HOLE:
        pytest.skip("this file system stores no holes")
    return path


@pytest.mark.parametrize("skip", [1, 2, 3, 4, 5, 1000])
def test_skips_and_counts_step_over_a_sparse_files_holes(tmp_path: Path, skip: int) -> None:
    """The chaos run's read at offset 1,000,000 of a 2 GB sparse file read the whole
    hole to count its lines (8 s of CPU; over two minutes next to CPU hogs, killing
    the run). Skipping and counting step over holes, with the answers of a reading of
    every byte, and read only the file's data."""
    path = _sparse_with_lines(tmp_path / "sparse.log")

    def answers(handle: _Tally) -> tuple[int, Any, int | None, int | None]:
        reader = LineReader(handle)  # type: ignore[arg-type]  # read and seek suffice
        skipped = reader.skip_lines(skip)
        line = reader.read_line(8, skip_rest=False)
        short = LineReader(handle).count_lines(1024)  # type: ignore[arg-type]
        return skipped, line and (line.data, line.cut), reader.count_lines(HOLE * 2), short

    with open(path, "rb") as sparse, open(path, "rb") as dense:
        stepped, read_all = _Tally(sparse), _Tally(dense, dense=True)
        assert answers(stepped) == answers(read_all)
    assert read_all.read_bytes > HOLE
    assert stepped.read_bytes < 8 * 1024 * 1024, "the hole was read"
