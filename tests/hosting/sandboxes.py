"""Helpers of the sandbox's tests, importable by name (a conftest is not: tests/net has
one too, and whichever is imported first owns the module name `conftest`)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXAMPLE = ROOT / "examples" / "hosted_bot"


def version_of(tmp: Path, source: Path = EXAMPLE) -> Path:
    """A copy of a version's folder, as the host would extract it (world-readable)."""
    dest = tmp / f"version-{uuid.uuid4().hex[:6]}"
    shutil.copytree(source, dest)
    dest.chmod(0o755)
    return dest
