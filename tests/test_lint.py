"""Lint and types are part of the test command: ruff on the tree, mypy --strict on the package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_is_clean() -> None:
    res = _run(sys.executable, "-m", "ruff", "check", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_strict_is_clean() -> None:
    # The packages and `strict = true` come from pyproject.toml.
    res = _run(sys.executable, "-m", "mypy")
    assert res.returncode == 0, res.stdout + res.stderr
