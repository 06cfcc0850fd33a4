"""A private PostgreSQL server for the tests, started by the tests themselves.

Debian's `postgresql` package (scripts/test.sh installs it) provides the binaries under
/usr/lib/postgresql/<version>/bin; `Postgres` runs `initdb` in a temporary folder and
starts `postgres` on a free 127.0.0.1 port, its unix socket in that folder too. The
server refuses to run as root, and CI runs as root: then every PostgreSQL process runs
as the `postgres` user the package creates (else `nobody`), switched to by subprocess's
own setuid/setgid (what `setpriv` does), and the folder is made theirs. Durability is
off (fsync, full-page writes): a test server's data lives as long as the test session.

Without PostgreSQL the `postgres` fixture fails the test with one line that says how to
install it: never a skip, since a skipped backend is an untested one.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

import psycopg
import pytest

from clients.redisproc import free_port

INSTALL = ("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): "
           "`apt-get install postgresql`, as scripts/test.sh does")
SUPERUSER = "moonshot"  # the cluster's superuser (initdb -U), trusted on local connections


def binaries() -> Path | None:
    """The bin folder of the newest PostgreSQL installed, or None."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")]
    return max(found, key=lambda p: [int(n) for n in re.findall(r"\d+", p.parent.name)],
               default=None)


def _run_as() -> pwd.struct_passwd | None:
    """The user PostgreSQL runs as when we are root; None: as ourselves."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root, and no postgres or nobody user to run PostgreSQL as")


@dataclass
class Postgres:
    """One PostgreSQL cluster in its own folder; `start`, `stop` and `start` again."""

    bin: Path
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="moonshot-pg-")))
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    user: pwd.struct_passwd | None = field(default_factory=_run_as)
    _names: Iterator[int] = field(default_factory=count)

    @property
    def data(self) -> Path:
        """The cluster's data directory."""
        return self.folder / "data"

    def _popen(self, argv: list[str], log: Path | None = None) -> subprocess.Popen[bytes]:
        """Start a PostgreSQL binary as the cluster's user, in the folder."""
        out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115
        as_user = {} if self.user is None else {
            "user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "TZ": "UTC"}
        try:
            return subprocess.Popen([str(self.bin / argv[0]), *argv[1:]], cwd=self.folder,
                                    stdout=out, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True, **as_user)  # type: ignore[call-overload]
        finally:
            if log is not None:
                out.close()  # type: ignore[union-attr]

    def init(self) -> Postgres:
        """initdb: a new cluster whose local connections are trusted."""
        if self.user is not None:
            os.chown(self.folder, self.user.pw_uid, self.user.pw_gid)
        proc = self._popen(["initdb", "-D", str(self.data), "-U", SUPERUSER, "-A", "trust",
                            "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"],
                           self.folder / "initdb.log")
        if proc.wait(timeout=120) != 0:
            log = (self.folder / "initdb.log").read_text(errors="replace")
            raise RuntimeError(f"initdb failed:\n{log}")
        return self

    def start(self, timeout: float = 30.0) -> Postgres:
        """Start the server (on the port it had, if it ran before) and wait until it
        answers."""
        self.port = self.port or free_port()
        self.proc = self._popen([
            "postgres", "-D", str(self.data), "-p", str(self.port),
            "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.folder}",
            "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off",
            "-c", "max_connections=100", "-c", "shared_buffers=32MB",
        ], self.folder / "postgres.log")
        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.dsn("postgres"), connect_timeout=2).close()
                return self
            except psycopg.OperationalError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    log = (self.folder / "postgres.log").read_text(errors="replace")
                    self.stop()
                    raise RuntimeError(f"PostgreSQL did not start:\n{log[-3000:]}") from None
                time.sleep(0.05)

    def dsn(self, database: str) -> str:
        """A libpq URL of `database` on this server."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def url(self, database: str) -> str:
        """The archive URL of `database` on this server."""
        return self.dsn(database)

    def create_database(self, name: str | None = None) -> str:
        """Create a fresh empty database (a new name each call unless given); its name."""
        name = name or f"t{next(self._names)}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            # A file copy of an empty template beats 15's default (WAL-logged) strategy.
            how = " STRATEGY file_copy" if conn.info.server_version >= 150000 else ""
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0{how}')
        return name

    def stop(self, how: signal.Signals = signal.SIGINT) -> None:
        """Stop the server: SIGINT is PostgreSQL's fast shutdown, SIGKILL a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(how)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def remove(self) -> None:
        """Stop the server and delete its folder."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A PostgreSQL server for the whole session; fails the test when none is installed."""
    found = binaries()
    if found is None:
        pytest.fail(INSTALL, pytrace=False)
    server = Postgres(found).init().start()
    yield server
    server.remove()
