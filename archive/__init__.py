"""The database of record for what is finished: the compact game encoding (`archive.codec`).

Imports only `moon`, `bots` and `store` of the project (docs/architecture.md).
"""
