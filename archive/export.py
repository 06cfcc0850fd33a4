"""Exports for analysis: finished games as Parquet or JSON lines, the forms people load
into pandas, DuckDB or R (`moonshot export` writes them; `clients/export.py`).

Two forms:

- **games**: one row per game: `match_id`, `event_kind` and `event_id` (null for a
  single match), `pool`, `board`, `unit`, `seed`, `finished_at` and `released_at`
  (timestamps, UTC), `players`, per seat s (0 to 3; null for seat 3 of a 3p game)
  `bot<s>`, `name<s>`, `place<s>` (1 best) and `score<s>` (its side's final score: its
  own in 3p, its team's in 2v2), `winner` (the winning seat in 3p, team in 2v2; null
  for a draw), `end`, `forfeit_seat`, `forfeit_reason`, `actions`, `rated`, and with
  transcripts `transcript` (its `moon-transcript/1` JSON).
- **seats**: one row per game and seat: `match_id`, `event_kind`, `event_id`, `pool`,
  `board`, `unit`, `finished_at`, `players`, `seat`, `bot_id`, `name`, `place`, `score`
  and `quarters`, the seat's game score in quarters (`store.results.game_quarters`: 4 a
  win, 2 a draw, 0 a loss): "on which boards did my bot lose points against the other
  version" is one self-join on `board` and `seat`.

Parquet is written in row groups of up to ROW_GROUP rows (fewer when transcripts fill
GROUP_BYTES first), compressed with zstd. JSON lines: one object per row; in the games
form with transcripts each line IS the game's transcript, byte for byte as the referee
wrote it, with the game's columns it does not hold already appended (`match_id`, `seed`,
`players`, `board`, `unit`, `winner` and `end` are the transcript's own and agree with
the columns), so `moon.transcript.read_jsonl` reads the file back as transcripts. Times
in JSON are ISO 8601 in UTC (`2026-12-04T22:57:52.123456Z`).

The file is written whole or not at all: to a temporary file beside it, renamed over it
at the end (`write`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from archive.reads import ArchivedGame
from store.pools import Pool
from store.results import game_quarters

__all__ = ["FORMATS", "FORMS", "GAME_COLUMNS", "GROUP_BYTES", "ROW_GROUP", "SEAT_COLUMNS",
           "Written", "game_columns", "game_values", "seat_rows", "seat_values", "write"]

FORMATS = ("parquet", "jsonl")
FORMS = ("games", "seats")
ROW_GROUP = 100_000  # rows of a Parquet row group, at most
GROUP_BYTES = 64 << 20  # ... and transcript bytes: a row group with transcripts stays small
SEATS = 4  # per-seat columns of the games form (seat 3 null in a 3p game)


@dataclass(frozen=True, slots=True)
class Written:
    """What an export wrote: games, rows (one per game, or per seat), bytes, where."""

    games: int
    rows: int
    bytes: int
    path: Path


_PER_SEAT = ("bot", "name", "place", "score")
GAME_COLUMNS = ("match_id", "event_kind", "event_id", "pool", "board", "unit", "seed",
                "finished_at", "released_at", "players",
                *(f"{c}{s}" for c in _PER_SEAT for s in range(SEATS)),
                "winner", "end", "forfeit_seat", "forfeit_reason", "actions", "rated")
SEAT_COLUMNS = ("match_id", "event_kind", "event_id", "pool", "board", "unit", "finished_at",
                "players", "seat", "bot_id", "name", "place", "score", "quarters")
_POOL = {p.players: str(p) for p in Pool}


def _scores(g: ArchivedGame) -> tuple[int, ...]:
    """Each seat's side's final score: its own in 3p, its team's in 2v2."""
    f = g.final
    return f if g.players == 3 else (f[0], f[1], f[0], f[1])


def game_values(g: ArchivedGame) -> tuple[Any, ...]:
    """A game's values in the games form, in GAME_COLUMNS' order (times as unix seconds;
    without transcript)."""
    n, ev = g.players, g.event
    pad = (None,) * (SEATS - n)
    return (g.match_id, None if ev is None else ev.kind.value, None if ev is None else ev.id,
            _POOL[n], g.board, g.unit, g.seed, g.finished_at, g.released_at, n,
            *g.bot_ids, *pad, *g.names, *pad, *g.placement, *pad, *_scores(g), *pad,
            g.winner, g.end, g.forfeit_seat, g.forfeit_reason, g.actions, g.rated)


def game_columns(g: ArchivedGame) -> dict[str, Any]:
    """A game's columns in the games form, by name (see `game_values`)."""
    return dict(zip(GAME_COLUMNS, game_values(g), strict=True))


def seat_values(g: ArchivedGame) -> list[tuple[Any, ...]]:
    """A game's rows in the seats form, one per seat in seat order (SEAT_COLUMNS' order)."""
    n, ev = g.players, g.event
    head = (g.match_id, None if ev is None else ev.kind.value, None if ev is None else ev.id,
            _POOL[n], g.board, g.unit, g.finished_at, n)
    scores = _scores(g)
    return [(*head, s, g.bot_ids[s], g.names[s], g.placement[s], scores[s],
             game_quarters(n, g.placement, s)) for s in range(n)]


def seat_rows(g: ArchivedGame) -> list[dict[str, Any]]:
    """A game's rows in the seats form, by name (see `seat_values`)."""
    return [dict(zip(SEAT_COLUMNS, row, strict=True)) for row in seat_values(g)]


def _transcript(g: ArchivedGame) -> tuple[dict[str, Any], str]:
    """A game's transcript and its JSON, as the referee wrote it."""
    t = g.transcript()
    return t, json.dumps(t, separators=(",", ":"))


_TIMES = ("finished_at", "released_at")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(t: float | None) -> int | None:
    """Unix seconds to whole microseconds (what both formats hold, so they agree)."""
    return None if t is None else round(t * 1_000_000)


def _iso(t: float | None) -> str | None:
    micros = _micros(t)
    if micros is None:
        return None
    return (_EPOCH + timedelta(microseconds=micros)).isoformat(
        timespec="microseconds").replace("+00:00", "Z")


class _Sink(Protocol):
    def add(self, games: Sequence[ArchivedGame]) -> int: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


class _Jsonl:
    """JSON lines: one object per row (see the module's doc)."""

    def __init__(self, fh: Any, form: str, transcripts: bool) -> None:
        self.fh = fh
        self.form = form
        self.transcripts = transcripts

    def add(self, games: Sequence[ArchivedGame]) -> int:
        lines: list[str] = []
        for g in games:
            rows = [game_columns(g)] if self.form == "games" else seat_rows(g)
            for row in rows:
                for k in _TIMES:
                    if k in row:
                        row[k] = _iso(row[k])
            if self.form == "games" and self.transcripts:
                held, text = _transcript(g)
                extra = {k: v for k, v in rows[0].items() if k not in held}
                tail = json.dumps(extra, separators=(",", ":"))
                lines.append(text[:-1] + ("," + tail[1:] if extra else "}"))
            else:
                lines += [json.dumps(row, separators=(",", ":")) for row in rows]
        if lines:
            self.fh.write("\n".join(lines) + "\n")
        return len(lines)

    def close(self) -> None:
        self.fh.flush()

    def abort(self) -> None:
        pass


def _schema(form: str, transcripts: bool) -> Any:
    import pyarrow as pa

    types = {"seed": pa.uint64(), "finished_at": pa.timestamp("us", tz="UTC"),
             "released_at": pa.timestamp("us", tz="UTC"), "players": pa.int8(),
             "seat": pa.int8(), "place": pa.int8(), "score": pa.int32(),
             "quarters": pa.int8(), "winner": pa.int8(), "forfeit_seat": pa.int8(),
             "actions": pa.int32(), "rated": pa.bool_()}
    for s in range(SEATS):
        types |= {f"place{s}": pa.int8(), f"score{s}": pa.int32()}
    names = SEAT_COLUMNS if form == "seats" else GAME_COLUMNS
    fields = [(name, types.get(name, pa.string())) for name in names]
    if transcripts:
        fields.append(("transcript", pa.string()))
    return pa.schema(fields)


class _Parquet:
    """Parquet, a row group per ROW_GROUP rows or GROUP_BYTES of transcripts."""

    def __init__(self, fh: Any, form: str, transcripts: bool, row_group: int) -> None:
        import pyarrow.parquet as pq

        self.form = form
        self.transcripts = transcripts and form == "games"
        self.schema = _schema(form, self.transcripts)
        names = SEAT_COLUMNS if form == "seats" else GAME_COLUMNS
        self.times = [i for i, name in enumerate(names) if name in _TIMES]
        self.writer = pq.ParquetWriter(fh, self.schema, compression="zstd")
        self.row_group = row_group
        self.buffer: list[tuple[Any, ...]] = []
        self.texts: list[str] = []
        self.text_bytes = 0

    def add(self, games: Sequence[ArchivedGame]) -> int:
        added = 0
        for g in games:
            if self.form == "games":
                self.buffer.append(game_values(g))
                added += 1
            else:
                rows = seat_values(g)
                self.buffer += rows
                added += len(rows)
            if self.transcripts:
                _, text = _transcript(g)
                self.texts.append(text)
                self.text_bytes += len(text)
            if len(self.buffer) >= self.row_group or self.text_bytes >= GROUP_BYTES:
                self._flush()
        return added

    def _flush(self) -> None:
        import pyarrow as pa

        if not self.buffer:
            return
        columns: list[Any] = list(zip(*self.buffer, strict=True))
        for i in self.times:
            columns[i] = [_micros(t) for t in columns[i]]
        if self.transcripts:
            columns.append(self.texts)
        arrays = [pa.array(col, type=f.type) for col, f in zip(columns, self.schema,
                                                                strict=True)]
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema),
                                row_group_size=len(self.buffer))
        self.buffer, self.texts, self.text_bytes = [], [], 0

    def close(self) -> None:
        self._flush()
        self.writer.close()

    def abort(self) -> None:
        """Let the writer go before its file closes (what it wrote is thrown away)."""
        with contextlib.suppress(Exception):
            self.writer.close()


def _temp_beside(path: Path) -> tuple[Path, int]:
    """A new file beside `path` (same folder: the rename is atomic), created exclusively."""
    while True:
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return temp, os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


def write(batches: Iterable[Sequence[ArchivedGame]], path: Path, *, fmt: str = "parquet",
          form: str = "games", transcripts: bool = False, row_group: int = ROW_GROUP,
          progress: Callable[[int], None] | None = None) -> Written:
    """Write the games of `batches` to `path` in format `fmt` (parquet, jsonl) and form
    `form` (games, seats), with transcripts if asked (the games form only): to a
    temporary file beside it, synced and renamed over `path` once complete, so `path` is
    the whole export or what was there before. `progress` hears the games written so far
    after each batch."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}, got {form!r}")
    temp, fd = _temp_beside(path)
    games = rows = 0
    try:
        with open(fd, "wb" if fmt == "parquet" else "w", encoding=None if fmt == "parquet"
                  else "utf-8") as fh:
            sink: _Sink = (_Parquet(fh, form, transcripts, row_group) if fmt == "parquet"
                           else _Jsonl(fh, form, transcripts))
            try:
                for batch in batches:
                    rows += sink.add(batch)
                    games += len(batch)
                    if progress is not None:
                        progress(games)
                sink.close()
            except BaseException:
                sink.abort()
                raise
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    return Written(games=games, rows=rows, bytes=path.stat().st_size, path=path)
