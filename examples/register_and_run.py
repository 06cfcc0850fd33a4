"""Register a bot with a referee and play with it until Ctrl-C.

    python -m examples.register_and_run 127.0.0.1:50051 my-highest-bot   # from the repo root

A refusal (the name is taken, no referee answers there) is said in one line, as the
`moonshot` command says it.
"""

import logging
import sys

import grpc

from clients.sdk import FatalStreamError, register, rpc_failure, run_bot
from examples.highest_bot import HighestBot


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: python -m examples.register_and_run HOST:PORT BOT_NAME", file=sys.stderr)
        return 2
    server, name = sys.argv[1], sys.argv[2]
    try:
        bot_id, token = register(server, name)
    except grpc.RpcError as exc:
        print(f"register_and_run: cannot register {name!r}: {rpc_failure(exc, server)}",
              file=sys.stderr)
        return 1
    print(f"registered {name} as {bot_id}; token (keep it): {token}")
    logging.basicConfig(level=logging.INFO)
    try:
        run_bot(HighestBot, server, token)  # reconnects by itself; Ctrl-C to stop
    except FatalStreamError as exc:  # the token refused, or no referee at the start
        print(f"register_and_run: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
