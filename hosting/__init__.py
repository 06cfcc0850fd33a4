"""The host: starts, watches and stops sandboxed hosted versions (see docs/hosting.md)."""
