"""Register a bot with a referee and play with it until Ctrl-C.

    python -m examples.register_and_run 127.0.0.1:50051 my-highest-bot   # from the repo root
"""

import logging
import sys

from clients.sdk import register, run_bot
from examples.highest_bot import HighestBot


def main() -> None:
    server, name = sys.argv[1], sys.argv[2]
    bot_id, token = register(server, name)
    print(f"registered {name} as {bot_id}; token (keep it): {token}")
    logging.basicConfig(level=logging.INFO)
    run_bot(HighestBot, server, token)  # reconnects by itself; Ctrl-C to stop


if __name__ == "__main__":
    main()
