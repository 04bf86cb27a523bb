#!/usr/bin/python3
"""flockd's container image, run as a user would run it (`make image-test`).

Usage: test_image.py [TEST...]   (IMAGE names the image, default flockd:latest)

The image must have been built (`make image`). Each test starts its own
containers with the engine docker/image.sh picks, publishes them on a free
loopback port, and removes them when done; the compose tests bring
docker/compose.yaml up under a project name of their own, from a copy of
the file in a temporary folder, so a docker/.env of the developer's never
leaks in. The output ends with "N passed, N failed".
"""

import datetime
import json
import os
import pathlib
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from flockd_harness import Client, Suite  # noqa: E402

IMAGE = os.environ.get("IMAGE", "flockd:latest")
os.environ.setdefault("CONTAINERS_CONF", str(ROOT / "docker" / "containers.conf"))
ENGINE = subprocess.run([str(ROOT / "docker" / "image.sh"), "engine"], check=True,
                        capture_output=True, text=True).stdout.strip()
COMPOSE = ["podman-compose"] if ENGINE == "podman" else ["docker", "compose"]
PREFIX = f"flockd-imagetest-{os.getpid()}"
# What the image may weigh: the runtime stage is the base, two libraries and
# flockd; a toolchain or -dev package slipping into it is far above this.
MAX_IMAGE_MB = 120
# flockd's start-up lines about admins (server/app/main.c).
NO_TOKEN_LINE = "remote clients never"
TOKEN_LINE = "admins: joins with the admin token"

suite = Suite(timeout=180)


def engine(*args, check=True, timeout=60):
    """Runs the container engine; returns the CompletedProcess (text)."""
    r = subprocess.run([ENGINE, *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{ENGINE} {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return r


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(port, path, timeout=5, tls=False):
    """GET http[s]://127.0.0.1:PORT/PATH (a TLS certificate is not checked);
    returns (status, body text)."""
    ctx = ssl._create_unverified_context() if tls else None
    scheme = "https" if tls else "http"
    with urllib.request.urlopen(f"{scheme}://127.0.0.1:{port}{path}", timeout=timeout,
                                context=ctx) as r:
        return r.status, r.read().decode()


def wait_healthz(port, timeout=30, tls=False):
    """The /healthz JSON once flockd answers it, or an AssertionError."""
    deadline = time.time() + timeout
    while True:
        try:
            status, body = http(port, "/healthz", timeout=2, tls=tls)
            if status == 200:
                return json.loads(body)
        except OSError:
            pass
        if time.time() > deadline:
            raise AssertionError(f"no /healthz on port {port} within {timeout} s")
        time.sleep(0.2)


def health(name, timeout=45):
    """True if the container's HEALTHCHECK passes, False if it fails. Podman
    without systemd never runs it by itself: `healthcheck run` runs it once.
    Docker runs it on its schedule: wait until it has a verdict."""
    if ENGINE == "podman":
        r = engine("healthcheck", "run", name, check=False)
        assert r.returncode in (0, 1), r.stderr
        return r.returncode == 0
    deadline = time.time() + timeout
    while time.time() < deadline:
        status = engine("inspect", "-f", "{{.State.Health.Status}}", name).stdout.strip()
        if status != "starting":
            return status == "healthy"
        time.sleep(1)
    raise AssertionError(f"{name}: no health verdict within {timeout} s")


def remove(name):
    """Removes a container at once, running or not."""
    engine("rm", "-f", *(["-t", "0"] if ENGINE == "podman" else []), name, check=False)


def logs(name):
    r = engine("logs", name)
    return r.stdout + r.stderr


class Container:
    """`ENGINE run -d` of the image with flockd's port published on a free
    loopback port (`port`); waits for /healthz unless `entrypoint` replaces
    flockd. Removed, whatever happened, when the block ends."""

    count = 0

    def __init__(self, *args, inner_port=8080, env=None, entrypoint=None, volume=None):
        Container.count += 1
        self.name = f"{PREFIX}-{Container.count}"
        self.port = free_port()
        self.tls = "--tls-cert" in args
        self.cmd = ["run", "-d", "--name", self.name,
                    "-p", f"127.0.0.1:{self.port}:{inner_port}"]
        if volume:  # (host folder, folder in the container), read-only
            self.cmd += ["-v", f"{volume[0]}:{volume[1]}:ro"]
        for k, v in (env or {}).items():
            self.cmd += ["-e", f"{k}={v}"]
        if entrypoint:
            self.cmd += ["--entrypoint", entrypoint]
        self.cmd += [IMAGE, *args]
        self.runs_flockd = entrypoint is None

    def __enter__(self):
        engine(*self.cmd)
        try:
            if self.runs_flockd:
                self.healthz = wait_healthz(self.port, tls=self.tls)
        except BaseException:
            print(logs(self.name), file=sys.stderr)
            self.remove()
            raise
        return self

    def __exit__(self, *exc):
        self.remove()

    def remove(self):
        remove(self.name)


async def admin_join(port, **token):
    """Joins room "ops" as admin over the published port; returns the reply
    and the role of the welcome the connection started with."""
    c = await Client.connect(f"ws://127.0.0.1:{port}/ws")
    try:
        return await c.join("ops", "admin", **token), c.welcomes[0]["role"]
    finally:
        await c.close()


@suite.test
def image_keeps_its_healthcheck_runs_as_flockd_and_is_small():
    info = json.loads(engine("image", "inspect", IMAGE).stdout)[0]
    config = info["Config"]
    assert config.get("User") == "flockd", config.get("User")
    # docker keeps it in Config, podman (which needs --format docker to
    # keep it at all) beside Config.
    check = config.get("Healthcheck") or info.get("Healthcheck") or {}
    assert check.get("Test") == ["CMD", "flockd-healthcheck"], check
    mb = info["Size"] / 1e6
    print(f"     image {IMAGE}: {mb:.1f} MB")
    assert mb < MAX_IMAGE_MB, f"{mb:.1f} MB"


@suite.test
def build_context_holds_only_what_the_image_is_built_from():
    """The repository's .dockerignore, applied by the engine itself to a
    small tree with a secret, build output and dependencies in it."""
    keep = ["CMakeLists.txt", "server/room/room.c", "proto/proto.c", "client/cli/flockctl.c",
            "client/web/index.html", "docker/healthcheck.sh", "docker/nats.conf",
            "docker/nats-start.sh"]
    leave_out = [".env", "docker/.env", "server/.env", "client/web/.env.local",
                 "build/server/flockd", "build-asan/CMakeCache.txt", "server/build/x.o",
                 "client/web/node_modules/ws/index.js", "tests/unit/test_sim.c",
                 "docker/compose.yaml", "README.md", ".git/config", "server/default.profraw"]
    base = subprocess.run([str(ROOT / "docker" / "image.sh"), "base"], check=True,
                          capture_output=True, text=True).stdout.strip()
    tag = f"{PREFIX}-context"
    with tempfile.TemporaryDirectory() as tmp:
        ctx = pathlib.Path(tmp, "ctx")
        for name in keep + leave_out:
            (ctx / name).parent.mkdir(parents=True, exist_ok=True)
            (ctx / name).write_text("secret\n" if ".env" in name else "x\n")
        shutil.copy(ROOT / ".dockerignore", ctx / ".dockerignore")
        dockerfile = pathlib.Path(tmp, "Dockerfile")
        dockerfile.write_text(f"FROM {base}\nCOPY . /ctx/\n")
        engine("build", "-q", "-f", str(dockerfile), "-t", tag, str(ctx), timeout=120)
        try:
            found = engine("run", "--rm", "--entrypoint", "find", tag, "/ctx", "-type", "f")
        finally:
            engine("rmi", "-f", tag, check=False)
    files = sorted(line.removeprefix("/ctx/") for line in found.stdout.split())
    assert files == sorted(keep), files


@suite.test
async def container_serves_healthz_the_viewer_and_snapshots():
    with Container() as c:
        assert c.healthz["status"] == "ok" and c.healthz["boids"] > 0, c.healthz
        status, page = http(c.port, "/")
        assert status == 200 and "<title>flockd viewer</title>" in page, page[:200]
        status, module = http(c.port, "/js/main.js")
        assert status == 200 and "import" in module
        client = await Client.connect(f"ws://127.0.0.1:{c.port}/ws", headers_only=True)
        try:
            first = await client.next_snapshot()
            later = await client.next_snapshot(after_tick=first["tick"] + 10)
            assert later["boid_count"] == c.healthz["boids"], later
        finally:
            await client.close()


@suite.test
def flockd_runs_as_a_non_root_user():
    with Container() as c:
        status = engine("exec", c.name, "cat", "/proc/1/comm", "/proc/1/status").stdout
        assert status.startswith("flockd\n"), status[:100]
        uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
        assert all(u != "0" for u in uids), uids
        assert engine("exec", c.name, "id", "-un").stdout.strip() == "flockd"


@suite.test
def healthcheck_reports_healthy():
    with Container() as c:
        assert health(c.name)


@suite.test
def healthcheck_follows_the_port_given_to_flockd():
    with Container("--port", "9123", inner_port=9123) as c:
        assert "listening on http://0.0.0.0:9123" in logs(c.name)
        assert health(c.name)


@suite.test
def healthcheck_reports_healthy_when_flockd_serves_tls():
    with tempfile.TemporaryDirectory() as tls:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=localhost", "-keyout", f"{tls}/flockd.key",
                        "-out", f"{tls}/flockd.crt"], check=True, capture_output=True)
        for f in ("flockd.key", "flockd.crt"):  # the container's user is not the owner
            os.chmod(f"{tls}/{f}", 0o644)
        os.chmod(tls, 0o755)
        with Container("--tls-cert", "/tls/flockd.crt", "--tls-key", "/tls/flockd.key",
                       volume=(tls, "/tls")) as c:
            assert "listening on https://0.0.0.0:8080" in logs(c.name)
            assert c.healthz["status"] == "ok"
            assert health(c.name)


@suite.test
def healthcheck_reports_unhealthy_when_no_flockd_answers():
    with Container("600", entrypoint="sleep") as c:
        assert not health(c.name)


def finished_at(name):
    """When the container's process exited, in seconds since the epoch,
    from the engine's record (RFC 3339 with nanoseconds, UTC)."""
    stamp = json.loads(engine("inspect", name).stdout)[0]["State"]["FinishedAt"]
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    utc = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.timezone.utc)
    return utc.timestamp() + float("0." + (fraction or "0"))


@suite.test
def sigterm_stops_flockd_cleanly_within_5_seconds():
    """Timed from just before the signal to the exit the engine recorded, so
    the engine's own start-up for `wait` on a busy machine does not count."""
    with Container() as c:
        t0 = time.time()
        engine("kill", "--signal", "TERM", c.name)
        code = engine("wait", c.name, timeout=30).stdout.strip()
        elapsed = finished_at(c.name) - t0
        print(f"     stopped in {elapsed:.2f} s")
        assert code == "0", (code, logs(c.name))
        assert elapsed < 5, elapsed


@suite.test
async def without_a_token_nobody_is_an_admin():
    with Container() as c:
        assert NO_TOKEN_LINE in logs(c.name)
        reply, first_role = await admin_join(c.port)
        assert first_role == "player", first_role
        assert reply["type"] == "error" and reply["code"] == "forbidden", reply


@suite.test
async def with_a_token_only_its_holder_is_an_admin():
    with Container(env={"FLOCKD_ADMIN_TOKEN": "s3cret"}) as c:
        assert TOKEN_LINE in logs(c.name)
        reply, _ = await admin_join(c.port, token="nope")
        assert reply["type"] == "error" and reply["code"] == "forbidden", reply
        reply, _ = await admin_join(c.port, token="s3cret")
        assert reply["type"] == "ack" and reply["role"] == "admin", reply


class Compose:
    """docker/compose.yaml brought up from a copy in a temporary folder (with
    `dotenv` as its .env, if given) under a project name of its own, with
    flockd published on a free loopback port; brought down at the end."""

    count = 0

    def __init__(self, dotenv=None, name="compose.yaml", env=None):
        Compose.count += 1
        self.project = f"{PREFIX}-compose-{Compose.count}"
        self.dir = tempfile.mkdtemp(prefix="flockd-compose-")
        self.file = os.path.join(self.dir, name)
        shutil.copy(ROOT / "docker" / name, self.file)
        # Build contexts are relative to the file: the copy's are the repository's.
        with open(self.file) as f:
            text = f.read()
        with open(self.file, "w") as f:
            f.write(text.replace("context: ..", f"context: {ROOT}"))
        if dotenv is not None:
            with open(os.path.join(self.dir, ".env"), "w") as f:
                f.write(dotenv)
        self.port = free_port()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("FLOCKD_")}
        self.env.update(FLOCKD_PUBLISH=f"127.0.0.1:{self.port}", FLOCKD_IMAGE=IMAGE, **(env or {}))
        with open(self.file) as f:
            self.services = sorted(yaml.safe_load(f)["services"])

    def run(self, *args):
        r = subprocess.run([*COMPOSE, "-p", self.project, "-f", self.file, *args],
                           capture_output=True, text=True, env=self.env, timeout=120)
        assert r.returncode == 0, f"compose {' '.join(args)}: exit {r.returncode}\n" \
                                  f"{r.stdout}\n{r.stderr}"

    def containers(self):
        """{service: container name} of the project's containers."""
        service = ('{{index .Labels "com.docker.compose.service"}}' if ENGINE == "podman"
                   else '{{.Label "com.docker.compose.service"}}')
        out = engine("ps", "-a", "--filter", f"label=com.docker.compose.project={self.project}",
                     "--format", "{{.Names}} " + service)
        return {svc: name for name, svc in (line.split() for line in out.stdout.splitlines())}

    def __enter__(self):
        try:
            self.run("up", "-d")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        try:
            self.run("down")
        finally:
            # What `down` left: containers of a failed start, and the
            # networks podman-compose 1.0.3 never removes.
            for name in self.containers().values():
                remove(name)
            label = f"label=com.docker.compose.project={self.project}"
            networks = engine("network", "ls", "--filter", label, "--format", "{{.Name}}")
            for network in networks.stdout.split():
                engine("network", "rm", "-f", network, check=False)
            shutil.rmtree(self.dir, ignore_errors=True)


def check_every_service(compose):
    """Every service of the compose file runs and passes its health check;
    returns {service: container name}."""
    names = compose.containers()
    assert sorted(names) == compose.services, (names, compose.services)
    for service, name in names.items():
        state = engine("inspect", "-f", "{{.State.Status}}", name).stdout.strip()
        assert state == "running", (service, state, logs(name))
        has_check = engine("inspect", "-f", "{{.Config.Healthcheck}}", name).stdout.strip()
        if has_check not in ("", "<nil>"):
            assert health(name), (service, logs(name))
    return names


@suite.test
async def the_cluster_compose_file_runs_nats_and_three_nodes_that_serve_one_room():
    base = subprocess.run([str(ROOT / "docker" / "image.sh"), "base"], check=True,
                          capture_output=True, text=True).stdout.strip()
    ports = [free_port() for _ in range(3)]
    env = {"FLOCKD_BASE": base, "FLOCKD_HOST_IP": "127.0.0.1",
           "FLOCKD_NATS_PASSWORD": secrets.token_urlsafe(18),
           **{f"FLOCKD_PORT{i + 1}": str(p) for i, p in enumerate(ports)}}
    with Compose(name="compose.cluster.yaml", env=env) as compose:
        names = check_every_service(compose)
        for p in ports:
            h = wait_healthz(p, timeout=60)
            assert h.get("nats") == "connected", h
        # Signed in to a NATS that asks for the password, which no log shows.
        for service, name in names.items():
            said = logs(name)
            assert env["FLOCKD_NATS_PASSWORD"] not in said, service
            assert service == "nats" or "signed in as flockd" in said, (service, said)
        # Every node lists the default room, ticked by one and the same node.
        deadline = time.time() + 30
        while True:
            owners = []
            for p in ports:
                rooms = json.loads(http(p, "/api/rooms")[1])["rooms"]
                owners += [r.get("node") for r in rooms if r["name"] == "default"]
            if len(owners) == 3 and len(set(owners)) == 1 and owners[0]:
                break
            assert time.time() < deadline, owners
            time.sleep(0.5)
        assert owners[0] in ("flockd1", "flockd2", "flockd3"), owners
        # A viewer on each node sees the room's snapshots.
        ticks = []
        for p in ports:
            c = await Client.connect(f"ws://127.0.0.1:{p}/ws", headers_only=True)
            ticks.append((await c.next_snapshot(timeout=10))["tick"])
            await c.close()
        assert all(t > 0 for t in ticks), ticks


@suite.test
async def compose_without_a_token_brings_up_every_service_with_no_admin():
    with Compose() as compose:
        names = check_every_service(compose)
        flockd = names["flockd"]
        assert wait_healthz(compose.port)["status"] == "ok"
        env = engine("exec", flockd, "printenv", "FLOCKD_ADMIN_TOKEN", check=False).stdout
        assert env.strip() == "", f"the container got a token: {env!r}"
        assert NO_TOKEN_LINE in logs(flockd)
        reply, first_role = await admin_join(compose.port)
        assert first_role == "player", first_role
        assert reply["type"] == "error" and reply["code"] == "forbidden", reply
        reply, _ = await admin_join(compose.port, token="${FLOCKD_ADMIN_TOKEN:-}")
        assert reply["type"] == "error" and reply["code"] == "forbidden", reply


@suite.test
async def compose_passes_the_admin_token_from_its_dot_env():
    with Compose(dotenv="FLOCKD_ADMIN_TOKEN=from-dot-env\n") as compose:
        flockd = check_every_service(compose)["flockd"]
        wait_healthz(compose.port)
        assert TOKEN_LINE in logs(flockd)
        reply, _ = await admin_join(compose.port, token="${FLOCKD_ADMIN_TOKEN:-}")
        assert reply["type"] == "error" and reply["code"] == "forbidden", reply
        reply, _ = await admin_join(compose.port, token="from-dot-env")
        assert reply["type"] == "ack" and reply["role"] == "admin", reply


if __name__ == "__main__":
    print(f"image-test: {IMAGE} with {ENGINE}", flush=True)
    suite.main(skip_args=0)
