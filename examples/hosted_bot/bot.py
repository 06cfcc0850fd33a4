"""A bot for the stack to host: submit this folder (`moonshot bot submit NAME
examples/hosted_bot`) and it runs in a sandbox, unchanged.

`run_bot` is given no referee and no token: in the sandbox they come from the
environment ($MOONSHOT_REFEREE, the sandbox's relay socket, and $MOONSHOT_TOKEN).
Run it by hand the same way: `MOONSHOT_REFEREE=127.0.0.1:50051 MOONSHOT_TOKEN=...
python bot.py`.
"""

import logging
import sys

from clients.builtin import GreedyBot
from clients.sdk import FatalStreamError, run_bot


class HostedGreedy(GreedyBot):
    """The built-in greedy player, under a name of its own."""

    name = "hosted-greedy"


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        run_bot(HostedGreedy, threads=0)  # greedy decides at once: no thread pool needed
    except (FatalStreamError, ValueError) as exc:
        print(f"hosted bot: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
