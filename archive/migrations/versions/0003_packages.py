"""The packages of hosted versions: a submitted folder's tar.gz, kept once by its SHA-256.

A hosted version (a bot whose code the stack runs) names its package by digest; Redis
keeps what is live about the version, the archive keeps the bytes, once however many
versions share them.

Revision ID: 0003
Revises: 0002
Create Date: 2027-01-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add `packages`."""
    op.create_table(
        "packages",
        sa.Column("digest", sa.Text, nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.PrimaryKeyConstraint("digest", name="pk_packages"),
    )


def downgrade() -> None:
    """Drop `packages` (and every package in it)."""
    op.drop_table("packages")
