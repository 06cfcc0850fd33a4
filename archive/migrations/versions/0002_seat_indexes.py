"""A bot's games through one index a seat, in place of the `plays` table; no fit index.

`plays` held a (bot, game) row for each bot of a game: 176 bytes a 3p game in
PostgreSQL (a heap tuple and a key entry each), a third of an archived game. An index on
(seat, id) for each seat holds the same, about 23 bytes an entry, and a bot's listing
merges the four range scans (archive/reads.py). The index for the rating fit's read
(players, rated, released_at: 32 bytes a game) goes too: the fit reads nearly every
row of its pool, a scan. An archive of any size is upgraded in place: the indexes are
built from the games, then the table and the old index dropped.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_SEAT3 = sa.text("seat3 IS NOT NULL")


def upgrade() -> None:
    """Index each seat, drop `plays` and the fit's index."""
    for seat in range(3):
        op.create_index(f"ix_games_seat{seat}_id", "games", [f"seat{seat}", "id"])
    op.create_index("ix_games_seat3_id", "games", ["seat3", "id"],
                    postgresql_where=_SEAT3, sqlite_where=_SEAT3)
    op.drop_table("plays")
    op.drop_index("ix_games_players_rated_released_at", table_name="games")


def downgrade() -> None:
    """Back to `plays` (filled from the games' seats) and the fit's index."""
    op.create_index("ix_games_players_rated_released_at", "games",
                    ["players", "rated", "released_at"])
    op.create_table(
        "plays",
        sa.Column("bot", sa.Integer, nullable=False),
        sa.Column("game", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("bot", "game", name="pk_plays"),
        sqlite_with_rowid=False,
    )
    op.execute("INSERT INTO plays (bot, game) "
               + " UNION ".join(f"SELECT seat{s}, id FROM games WHERE seat{s} IS NOT NULL"
                                for s in range(4)))
    for seat in range(4):
        op.drop_index(f"ix_games_seat{seat}_id", table_name="games")
