"""Several bots in one process, each on a Play stream of its own (the SDK's BotRunner):
`python manybots.py SERVER KIND TOKEN...` (KIND as for `moonshot bot run --bot`).

A field of a dozen bots costs one process instead of twelve. Prints `connected N bots`
once every one has been welcomed, then plays until killed.
"""

from __future__ import annotations

import asyncio
import sys

from clients.builtin import load_bot
from clients.sdk import BotRunner


async def main(server: str, kind: str, tokens: list[str]) -> None:
    """Run every bot until the process is stopped."""
    cls = load_bot(kind)
    runners = [BotRunner(cls, server, token, threads=0) for token in tokens]
    tasks = [asyncio.create_task(r.run()) for r in runners]
    while not all(r.connected for r in runners):
        for t in tasks:
            if t.done():
                t.result()  # a bot that could not start: say why
        await asyncio.sleep(0.05)
    print(f"connected {len(runners)} bots", flush=True)
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
