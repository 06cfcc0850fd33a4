"""Generated Python for the `moon.v1` wire contract; rebuild with `python scripts/gen_proto.py`.

Only `server/wire.py` and `clients/wire.py` convert these messages to and from
the engine's values; everything else speaks in engine values or passes
messages through untouched.
"""
