#!/usr/bin/python3
"""flockd's connection to NATS secured (server/cluster/CLUSTER.md §8): a
real `nats-server -js` whose configuration asks for a user and password
(with the permissions CLUSTER.md §8 gives a node's user), one that asks
for a token, and one that serves TLS and verifies its clients'
certificates (a CA, the server's and a client's certificate made with
openssl in a temporary folder). On each, two nodes sign in (by the URL,
by flags, from the environment) and share a room: a command through the
node that does not own it is acked and takes effect, and viewers on both
get its frames. A wrong password or token, TLS without the CA or without
a client certificate stops a node at start, with a non-zero status and a
message naming the cause and the URL without its secret; settings that do
not go together, and files that cannot be read, stop it with status 2
before it tries. No secret shows in a node's output, /healthz, /metrics
or /api/rooms.

Usage: test_cluster_secure.py FLOCKD_BINARY [TEST_NAME...]
The last line is "N passed, N failed".
"""

import contextlib
import os
import shutil
import subprocess
import tempfile

from flockd_harness import SANITIZER_REPORTS, Client, Suite, arg
from test_cluster import Nats, Node, by_id, settled

FLOCKD = arg(0, "build/server/flockd")
SUITE = Suite(timeout=120)
test = SUITE.test

PASSWORD = "pw-7f3a9c"
TOKEN = "tok-51e0d2"

# What a node's NATS user needs (CLUSTER.md §8): its own subjects, the
# JetStream API and the two buckets' subjects, and inboxes for replies.
USERS = f"""
authorization {{
  users = [
    {{user: flockd, password: "{PASSWORD}",
     permissions: {{
       publish: ["flockd.>", "$JS.API.>", "$KV.flockd.>", "$KV.flockd_ckpt.>", "_INBOX.>",
                 "$JS.FC.>"]
       subscribe: ["flockd.>", "_INBOX.>"]
     }}}}
  ]
}}
"""
TOKENS = f'authorization {{ token: "{TOKEN}" }}\n'


@contextlib.contextmanager
def nats_server(config):
    nats = Nats(config).start()
    try:
        yield nats
    finally:
        nats.stop()
        shutil.rmtree(nats.dir, ignore_errors=True)


@contextlib.contextmanager
def nodes(*per_node, envs=(None, None)):
    """Two nodes, n1 and n2, each with its own arguments (its --nats first)
    and variables added to its environment."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(Node(FLOCKD, *args, "--node-id", f"n{i + 1}",
                                        "--checkpoint-every", "1", env=env))
               for i, (args, env) in enumerate(zip(per_node, envs))]


def stopped_at_start(*args, env=None):
    """Runs flockd with args, which must stop it at start: its status and
    everything it wrote."""
    r = subprocess.run([FLOCKD, "--port", "0", "--host", "127.0.0.1", *args],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, **(env or {})))
    assert not any(s in r.stderr for s in SANITIZER_REPORTS), r.stderr
    return r.returncode, r.stdout + r.stderr


async def share_a_room(pair):
    """A command through the node that does not own `default` is acked and
    takes effect, and viewers on both nodes see it."""
    owner = by_id(pair, (await settled(pair))["default"])
    other = next(n for n in pair if n is not owner)
    watcher = await Client.connect(owner.url)
    c = await Client.connect(other.url)
    r = await c.command("obstacle_add", x=300.0, y=200.0, r=25.0)
    assert r["type"] == "ack" and r["tick"] > 0, r
    for viewer in (watcher, c):
        snap = await viewer.next_snapshot(after_tick=r["tick"])
        assert any(abs(o[1] - 300) < 1 and abs(o[2] - 200) < 1 for o in snap["obstacles"]), snap
    await c.close()
    await watcher.close()


def shows_no_secret(pair, *secrets):
    for n in pair:
        said = "".join(n.stdout + n.stderr)
        pages = [n.http(p)[2] for p in ("/healthz", "/metrics", "/api/rooms")]
        for s in secrets:
            assert s not in said and not any(s in p for p in pages), (n.args, s)
        assert '"nats":"connected"' in pages[0], pages[0]


@test
async def nodes_signed_in_with_a_user_and_password_share_a_room():
    with nats_server(USERS) as nats, \
         nodes(("--nats", f"nats://flockd:{PASSWORD}@127.0.0.1:{nats.port}"),
               ("--nats", nats.url, "--nats-user", "flockd"),
               envs=(None, {"FLOCKD_NATS_PASSWORD": PASSWORD})) as pair:
        await share_a_room(pair)
        shows_no_secret(pair, PASSWORD)
        banner = "".join(pair[0].stdout)
        assert f"nats://flockd:***@127.0.0.1:{nats.port}" in banner, banner
        assert "signed in as flockd" in "".join(pair[1].stdout), pair[1].stdout


@test
def a_wrong_password_stops_the_node_naming_the_cause():
    with nats_server(USERS) as nats:
        for args in (("--nats", f"nats://flockd:wrong-pw@127.0.0.1:{nats.port}"),
                     ("--nats", nats.url, "--nats-user", "flockd", "--nats-password", "wrong-pw")):
            status, said = stopped_at_start(*args)
            assert status != 0, (args, said)
            assert "refused the credentials: Authorization Violation" in said, said
            assert f"127.0.0.1:{nats.port}" in said and "wrong-pw" not in said, said


@test
async def nodes_signed_in_with_a_token_share_a_room_and_a_wrong_token_is_refused():
    with nats_server(TOKENS) as nats:
        with nodes(("--nats", f"nats://{TOKEN}@127.0.0.1:{nats.port}"),
                   ("--nats", nats.url, "--nats-token", TOKEN)) as pair:
            await share_a_room(pair)
            shows_no_secret(pair, TOKEN)
        status, said = stopped_at_start("--nats", nats.url, env={"FLOCKD_NATS_TOKEN": "bad-tok"})
        assert status != 0 and "refused the credentials" in said, said
        assert "bad-tok" not in said, said


def make_certificates(folder):
    """A CA, the server's certificate for 127.0.0.1 and a client's, with
    their keys (P-256), in folder."""
    def run(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    def new_key_and_request(name, subject):
        run("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", f"{name}-key.pem", "-out", f"{name}.csr", "-subj", subject)

    def sign(name, extension):
        with open(os.path.join(folder, f"{name}.ext"), "w") as f:
            f.write(extension + "\n")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
            "-CAcreateserial", "-days", "2", "-out", f"{name}.pem", "-extfile", f"{name}.ext")

    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2", "-subj", "/CN=flockd test CA")
    new_key_and_request("server", "/CN=nats")
    sign("server", "subjectAltName=IP:127.0.0.1,DNS:localhost")
    new_key_and_request("client", "/CN=flockd")
    sign("client", "extendedKeyUsage=clientAuth")
    return {name: os.path.join(folder, name) for name in
            ("ca.pem", "server.pem", "server-key.pem", "client.pem", "client-key.pem")}


@contextlib.contextmanager
def tls_nats():
    """A nats-server serving TLS only, verifying its clients' certificates,
    and the files: (nats, {file name: path})."""
    folder = tempfile.mkdtemp(prefix="flockd-natstls-")
    try:
        files = make_certificates(folder)
        config = (f'tls {{\n  cert_file: "{files["server.pem"]}"\n'
                  f'  key_file: "{files["server-key.pem"]}"\n'
                  f'  ca_file: "{files["ca.pem"]}"\n  verify: true\n  timeout: 10\n}}\n')
        with nats_server(config) as nats:
            yield nats, files
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@test
async def nodes_over_tls_with_client_certificates_share_a_room():
    with tls_nats() as (nats, f):
        url = f"tls://127.0.0.1:{nats.port}"
        full = ("--nats", url, "--nats-ca", f["ca.pem"], "--nats-cert", f["client.pem"],
                "--nats-key", f["client-key.pem"])
        with nodes(full, full) as pair:
            await share_a_room(pair)
            assert f"{url} (TLS)" in "".join(pair[0].stdout), pair[0].stdout


@test
def tls_without_the_ca_or_without_a_client_certificate_stops_the_node():
    with tls_nats() as (nats, f):
        url = f"tls://127.0.0.1:{nats.port}"
        status, said = stopped_at_start("--nats", url, "--nats-cert", f["client.pem"],
                                        "--nats-key", f["client-key.pem"])
        assert status != 0, said
        assert f"TLS with NATS at {url} failed" in said and "local issuer" in said, said
        status, said = stopped_at_start("--nats", url, "--nats-ca", f["ca.pem"])
        assert status != 0, said
        assert f"NATS at {url} hung up" in said and "--nats-cert" in said, said


@test
def settings_that_do_not_go_together_stop_the_node_with_status_2():
    url = "nats://127.0.0.1:4222"  # never reached: the settings stop it first
    for args, env, message in (
            (("--nats-cert", "/etc/hostname"), {},
             "--nats-cert and --nats-key go together"),
            (("--nats-user", "flockd"), {},
             "--nats-user and --nats-password (or FLOCKD_NATS_PASSWORD) go together"),
            (("--nats-token", "x"), {"FLOCKD_NATS_PASSWORD": "p"},
             "--nats-user and --nats-password"),
            (("--nats-creds", "/etc/hostname", "--nats-token", "x"), {},
             "NATS sign-in given twice, by --nats-token (or FLOCKD_NATS_TOKEN) and by "
             "--nats-creds"),
            (("--nats-ca", "/nonexistent/ca.pem"), {},
             "--nats-ca /nonexistent/ca.pem: No such file or directory")):
        status, said = stopped_at_start("--nats", url, *args, env=env)
        assert status == 2 and message in said, (args, status, said)
    status, said = stopped_at_start("--nats", "nats://u:secret-pw@127.0.0.1:4222",
                                    "--nats-token", "x")
    assert status == 2 and "given twice, by credentials in the --nats URL" in said, said
    assert "secret-pw" not in said, said


if __name__ == "__main__":
    SUITE.main(skip_args=1)
