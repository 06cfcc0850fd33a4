"""Where a referee is and how to reach it: plaintext, or TLS with a CA of one's own.

Every client of the project (the SDK, the organiser client, the CLI) opens its
channels through a `Target`, so TLS works the same everywhere: `--tls` (or
`MOONSHOT_TLS=1`) verifies the referee against the system's CAs, `--ca-cert FILE`
(or `MOONSHOT_CA_CERT`) against that CA only (a private CA or a self-signed
referee).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

__all__ = ["Target", "target_of"]

Options = Sequence[tuple[str, Any]]


@dataclass(frozen=True, slots=True)
class Target:
    """A referee's address and how to secure the connection."""

    address: str
    tls: bool = False
    ca_cert: bytes | None = None  # PEM of the CA to trust; None: the system's CAs

    def credentials(self) -> grpc.ChannelCredentials:
        """The TLS credentials (only with `tls`)."""
        return grpc.ssl_channel_credentials(root_certificates=self.ca_cert)

    def channel(self, options: Options = ()) -> grpc.Channel:
        """A blocking channel."""
        if self.tls:
            return grpc.secure_channel(self.address, self.credentials(), options=options)
        return grpc.insecure_channel(self.address, options=options)

    def aio_channel(self, options: Options = ()) -> grpc.aio.Channel:
        """An asyncio channel."""
        if self.tls:
            return grpc.aio.secure_channel(self.address, self.credentials(), options=options)
        return grpc.aio.insecure_channel(self.address, options=options)


def target_of(server: str | Target, tls: bool = False, ca_cert: str | Path | None = None
              ) -> Target:
    """A Target from an address (or a Target as it is); a CA file implies TLS."""
    if isinstance(server, Target):
        return server
    ca = Path(ca_cert).read_bytes() if ca_cert else None
    return Target(server, tls or ca is not None, ca)
