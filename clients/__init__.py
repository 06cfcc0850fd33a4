"""Bot SDK, built-in bots and the `moonshot` command line."""

import os

# gRPC's core logs a line of its own at INFO for every failed TLS handshake, on stderr,
# around the one line a command prints about it. It reads the level once, when grpc is
# first imported, which a client of this package does after this line; a level set in
# the environment wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
