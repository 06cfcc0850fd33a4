"""Write the bus messages' JSON Schema: `python scripts/bus_schema.py [--check]`.

The schema comes from the message classes in `store/messages.py` (the one place
they are defined); docs/bus-schema.json is what a reader in another language, or
a person, consults. With `--check` nothing is written and the exit status is 1
when the file is stale (the test suite runs this).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from store.messages import json_schema  # noqa: E402  (after the path is set)

TARGET = ROOT / "docs" / "bus-schema.json"


def main(argv: list[str]) -> int:
    """Write or check the schema file."""
    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run python scripts/bus_schema.py")
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
