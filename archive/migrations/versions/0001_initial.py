"""The first archive: bots, events, templates, games, plays, rating snapshots, meta.

Revision ID: 0001
Revises:
Create Date: 2026-05-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create every table of the first schema (see archive/schema.py for why each is so)."""
    op.create_table(
        "bots",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("bot_id", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_bots"),
        sa.UniqueConstraint("bot_id", name="uq_bots_bot_id"),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("created_at", sa.Double),
        sa.Column("finished_at", sa.Double),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("event_id", sa.Text, nullable=False),
        sa.Column("name", sa.Text),
        sa.Column("spec", sa.Text),
        sa.Column("status", sa.Text),
        sa.Column("summary", sa.Text),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
        sa.UniqueConstraint("kind", "event_id", name="uq_events_kind_event_id"),
    )
    op.create_table(
        "templates",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("hash", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_templates"),
        sa.UniqueConstraint("hash", name="uq_templates_hash"),
    )
    seats = [sa.Column(f"seat{s}", sa.Integer, nullable=s == 3) for s in range(4)]
    seat_keys = [sa.ForeignKeyConstraint([f"seat{s}"], ["bots.id"],
                                         name=f"fk_games_seat{s}_bots") for s in range(4)]
    op.create_table(
        "games",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("seed", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.Double),
        sa.Column("finished_at", sa.Double, nullable=False),
        sa.Column("released_at", sa.Double),
        sa.Column("event", sa.Integer),
        *seats,
        sa.Column("places", sa.Integer, nullable=False),
        sa.Column("template", sa.Integer, nullable=False),
        sa.Column("players", sa.SmallInteger, nullable=False),
        sa.Column("end_code", sa.SmallInteger, nullable=False),
        sa.Column("winner", sa.SmallInteger),
        sa.Column("forfeit_seat", sa.SmallInteger),
        sa.Column("actions", sa.SmallInteger, nullable=False),
        sa.Column("rated", sa.Boolean, nullable=False),
        sa.Column("match_id", sa.Text, nullable=False),
        sa.Column("board", sa.Text, nullable=False, server_default=""),
        sa.Column("unit", sa.Text, nullable=False, server_default=""),
        sa.Column("final", sa.Text, nullable=False),
        sa.Column("forfeit_reason", sa.Text),
        sa.Column("blob", sa.LargeBinary, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_games"),
        sa.UniqueConstraint("match_id", name="uq_games_match_id"),
        sa.ForeignKeyConstraint(["event"], ["events.id"], name="fk_games_event_events"),
        *seat_keys,
        sa.ForeignKeyConstraint(["template"], ["templates.id"],
                                name="fk_games_template_templates"),
    )
    op.create_index("ix_games_event_id", "games", ["event", "id"])
    op.create_index("ix_games_players_rated_released_at", "games",
                    ["players", "rated", "released_at"])
    op.create_table(
        "plays",
        sa.Column("bot", sa.Integer, nullable=False),
        sa.Column("game", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("bot", "game", name="pk_plays"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "rating_snapshots",
        sa.Column("pool", sa.Text, nullable=False),
        sa.Column("method", sa.Text, nullable=False),
        sa.Column("at", sa.Double, nullable=False),
        sa.Column("body", sa.LargeBinary, nullable=False),
        sa.PrimaryKeyConstraint("pool", "method", "at", name="pk_rating_snapshots"),
    )
    op.create_table(
        "meta",
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_meta"),
    )


def downgrade() -> None:
    """Drop every table of the first schema."""
    for table in ("meta", "rating_snapshots", "plays", "games", "templates", "events",
                  "bots"):
        op.drop_table(table)
