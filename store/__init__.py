"""The Redis contract shared by the referee and the workers.

Pure modules (no Redis import): `errors`, `ids`, `keys`, `status`, `records`,
`messages`. Modules that read and write Redis: `bots`, `matches`, `events`,
`tournaments`. Nothing here imports RQ or gRPC.
"""
