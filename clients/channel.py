"""Where a referee is and how to reach it: plaintext, or TLS with a CA of one's own.

Every client of the project (the SDK, the organiser client, the CLI) opens its
channels through a `Target`, so TLS works the same everywhere: `--tls` (or
`MOONSHOT_TLS=1`) verifies the referee against the system's CAs, `--ca-cert FILE`
(or `MOONSHOT_CA_CERT`) against that CA only (a private CA or a self-signed
referee).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

__all__ = ["Target", "diagnose", "host_port", "not_answered", "rpc_failure", "target_of"]

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


_SCHEME_PREFIXES = ("dns:///", "ipv4:", "ipv6:")
# What gRPC says when the connection itself failed (no call reached a referee), as
# opposed to an UNAVAILABLE a referee answered ("cannot reach Redis").
_NOT_ANSWERED = ("failed to connect", "socket closed", "connection refused", "handshake",
                 "dns resolution failed", "connections to all backends failing",
                 "no route to host", "connection reset", "deadline exceeded while connecting")


def not_answered(details: str) -> bool:
    """True when an UNAVAILABLE's details say the connection failed (no referee answered)."""
    low = details.lower()
    return any(s in low for s in _NOT_ANSWERED)
PROBE_TIMEOUT_S = 3.0


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a referee address (`HOST:PORT`, `[v6]:PORT`, `dns:///HOST:PORT`,
    the first of an `ipv4:` list), None for what names no TCP port (`unix:` ...)."""
    for prefix in _SCHEME_PREFIXES:
        if address.startswith(prefix):
            address = address[len(prefix):].split(",", maxsplit=1)[0]
            break
    else:
        if ":/" in address or address.startswith(("unix", "vsock")):
            return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _handshake(sock: socket.socket, host: str, ca: bytes | None, verify: bool) -> str | None:
    """A TLS handshake on `sock`: None if it succeeds, else the reason."""
    ctx = ssl.create_default_context(cadata=ca.decode() if ca else None)
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    try:
        with ctx.wrap_socket(sock, server_hostname=host):
            return None
    except ssl.SSLCertVerificationError as exc:
        return str(exc.verify_message or exc)
    except (ssl.SSLError, OSError) as exc:
        return str(exc) or type(exc).__name__


def diagnose(target: Target) -> str:
    """Why the referee at `target` did not answer, in one sentence a user can act on:
    nothing listens there, or it speaks TLS to a plaintext client (or plaintext to a TLS
    one), or its certificate is not trusted. It tries once, over TCP and TLS itself (a
    few milliseconds; up to PROBE_TIMEOUT_S on a silent network)."""
    where = host_port(target.address)
    up = "is `moonshot up` (or `moonshot referee`) running there?"
    other = "point --server or $MOONSHOT_SERVER at your referee"
    if where is None:
        return f"no referee answered at {target.address}: {up}"
    host, port = where

    def connect() -> socket.socket:
        return socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S)

    try:
        sock = connect()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return f"no referee at {target.address} ({why.lower()}): {up} Or {other}"
    tls_error = _handshake(sock, host, None, verify=False)
    if tls_error is None and not target.tls:
        return (f"the referee at {target.address} speaks TLS and this client plaintext: "
                "add --tls (a certificate from a public CA) or --ca-cert FILE.pem (a CA "
                "of your own), or set $MOONSHOT_TLS=1 or $MOONSHOT_CA_CERT")
    if tls_error is not None and target.tls:
        return (f"the referee at {target.address} does not speak TLS (it is plaintext, or "
                "not a referee) and this client asked for TLS: drop --tls and --ca-cert "
                "(and $MOONSHOT_TLS, $MOONSHOT_CA_CERT)")
    if target.tls:
        try:
            verified = _handshake(connect(), host, target.ca_cert, verify=True)
        except OSError as exc:
            verified = exc.strerror or type(exc).__name__
        if verified is not None:
            trust = "the CA of --ca-cert" if target.ca_cert else "the system's CAs"
            return (f"the referee at {target.address} speaks TLS, but {trust} do not vouch "
                    f"for its certificate ({verified}): pass --ca-cert with the CA that "
                    "signed it")
    return (f"something listens at {target.address} but did not answer as a referee: "
            f"{other}")


def rpc_failure(exc: grpc.RpcError, server: str | Target | None = None) -> str:
    """A failed call in one line a person can act on: the referee's own message (never
    gRPC's status code, which says nothing more), or, when no referee answered at
    `server`, why (`diagnose`)."""
    code = exc.code() if hasattr(exc, "code") else None
    details = (exc.details() if hasattr(exc, "details") else str(exc)) or ""
    if code == grpc.StatusCode.UNAVAILABLE and not_answered(details):
        if server is None:
            return ("no referee answered: start one with `moonshot up`, or point --server "
                    "or $MOONSHOT_SERVER at yours")
        return diagnose(target_of(server))
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "the referee did not answer in time; retry (it may be busy)"
    if not details:
        name = code.name.lower().replace("_", " ") if code is not None else "unknown error"
        return f"the call failed: {name}"
    return details
