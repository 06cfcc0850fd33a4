"""What a sandbox sees of the host, per runtime: read-only folders, links and environment.

- `python3.11`: this host's Python 3.11 interpreter and standard library (its prefix,
  at the same path: the interpreter finds its library there), /usr read-only (the C
  libraries it and the wheels link to), and at /opt/moonshot/site only grpcio,
  protobuf, numpy and typing_extensions (grpc's one dependency), each bound from where
  this host imports them; the project's SDK packages (what `clients/sdk.py` imports:
  clients, moon, bots, proto, store) at /opt/moonshot. `python`, `python3` and
  `python3.11` are on PATH. Never the repository's root nor the rest of a virtualenv.
- `node`: /usr read-only (the `node` binary and its libraries); the bot brings its
  node_modules in its own folder.
- `static`: nothing but the bot's folder (a static Linux executable).

No runtime gets the host's /etc: an interpreter needs none of it here (no users, no
DNS, no certificates: the referee's relay is a plaintext unix socket).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["RUNTIMES", "SDK_PACKAGES", "Runtime", "runtime"]

RUNTIMES = ("python3.11", "node", "static")
SDK_PACKAGES = ("clients", "moon", "bots", "proto", "store")
SITE_MODULES = ("grpc", "google", "numpy", "typing_extensions")
OPT = "/opt/moonshot"


@dataclass(frozen=True)
class Runtime:
    """The host paths a runtime binds read-only (host path -> sandbox path), the links it
    makes (sandbox path -> target) and the environment it sets."""

    name: str
    binds: tuple[tuple[Path, str], ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    dirs: tuple[str, ...] = field(default=())


def _usr() -> tuple[tuple[tuple[Path, str], ...], tuple[tuple[str, str], ...]]:
    """/usr, and the top-level links of a merged-/usr system (/lib -> usr/lib, ...), or
    the folders themselves where they are not links."""
    binds: list[tuple[Path, str]] = [(Path("/usr"), "/usr")]
    links: list[tuple[str, str]] = []
    for top in ("bin", "lib", "lib64", "sbin"):
        p = Path("/") / top
        if p.is_symlink():
            links.append((str(p), os.readlink(p)))
        elif p.is_dir():
            binds.append((p, str(p)))
    return tuple(binds), tuple(links)


def _module_paths(name: str) -> list[Path]:
    """Where this host imports a top-level module from (a package folder or a file), with
    an auditwheel `<name>.libs` folder beside it."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise RuntimeError(f"the python3.11 runtime needs {name}, which this host lacks "
                           "(pip install grpcio protobuf numpy)")
    if spec.submodule_search_locations:
        found = [Path(p) for p in spec.submodule_search_locations]
        if name == "google":  # a namespace: only the folder that holds protobuf
            found = [p for p in found if (p / "protobuf").is_dir()][:1]
    else:
        assert spec.origin is not None
        found = [Path(spec.origin)]
    libs = [p.parent / f"{name}.libs" for p in found]
    return found + [p for p in libs if p.is_dir()]


@functools.cache
def _python() -> Runtime:
    prefix = Path(sys.base_prefix).resolve()
    interpreter = prefix / "bin" / "python3.11"
    if not interpreter.exists():
        raise RuntimeError(f"no python3.11 interpreter at {interpreter}")
    usr, links = _usr()
    binds = list(usr)
    if not prefix.is_relative_to("/usr"):
        binds.append((prefix, str(prefix)))
    for name in SITE_MODULES:
        binds += [(p, f"{OPT}/site/{p.name}") for p in _module_paths(name)]
    for pkg in SDK_PACKAGES:
        binds += [(p, f"{OPT}/{pkg}") for p in _module_paths(pkg)[:1]]
    target = str(interpreter.resolve())
    links_ = [*links, *((f"{OPT}/bin/{n}", target) for n in ("python", "python3", "python3.11"))]
    env = (("PATH", f"{OPT}/bin:/usr/bin:/bin"), ("PYTHONPATH", f"{OPT}:{OPT}/site"),
           ("PYTHONDONTWRITEBYTECODE", "1"), ("PYTHONUNBUFFERED", "1"),
           ("PYTHONNOUSERSITE", "1"))
    return Runtime("python3.11", tuple(binds), tuple(links_), env, (f"{OPT}/bin",))


@functools.cache
def _node() -> Runtime:
    if not Path("/usr/bin/node").exists():
        raise RuntimeError("no /usr/bin/node on this host (apt-get install nodejs)")
    usr, links = _usr()
    return Runtime("node", usr, links, (("PATH", "/usr/bin:/bin"),))


def runtime(name: str) -> Runtime:
    """The runtime called `name`; ValueError naming the ones there are otherwise."""
    if name == "python3.11":
        return _python()
    if name == "node":
        return _node()
    if name == "static":
        return Runtime("static", env=(("PATH", "/bot"),))
    raise ValueError(f"no runtime {name!r}: the stack offers {', '.join(RUNTIMES)}")
