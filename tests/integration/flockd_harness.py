"""Start a real flockd on an ephemeral port and talk to it.

Shared by the integration tests: `Flockd` runs the binary and parses the
"flockd listening on http[s]://HOST:PORT" line (https with --tls-cert); `decode_snapshot` follows
proto/PROTOCOL.md's snapshot v1 layout; `Client` wraps a python3-websockets
connection that separates JSON replies from binary snapshots, welcomes and
rosters, and can join rooms.

Leaving a `Flockd` block stops flockd with SIGTERM and fails the test if it
does not exit 0 or wrote a sanitizer report (ASan, LSan, UBSan, TSan) to
stderr: leaks found at exit and data races count as failures.
"""

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import traceback
import urllib.request

import websockets

HEADER = struct.Struct("<2sBBBBHQQffIIHH")  # 44 bytes, PROTOCOL.md §4.2


def decode_header(buf):
    """The header fields of a snapshot and its checked length, without the
    sections: cheap enough for many clients or huge rooms."""
    (magic, version, typ, flags, _res, runs, tick, time_us, width, height,
     epoch, count, nobst, ntarg) = HEADER.unpack_from(buf, 0)
    assert magic == b"FK" and version == 1 and typ == 1, (magic, version, typ)
    size = HEADER.size + 5 * runs + 5 * count + 16 * nobst + 9 * ntarg
    assert size == len(buf), (size, len(buf))
    return {"tick": tick, "time_us": time_us, "width": width, "height": height,
            "epoch": epoch, "paused": bool(flags & 1), "wrap": bool(flags & 2),
            "run_count": runs, "boid_count": count, "obstacle_count": nobst,
            "target_count": ntarg, "size": size}


def decode_snapshot(buf):
    """Returns a dict with the header fields, boids, obstacles and targets."""
    snap = decode_header(buf)
    width, height, count = snap["width"], snap["height"], snap["boid_count"]
    off = HEADER.size
    groups = []
    for _ in range(snap["run_count"]):
        g, n = struct.unpack_from("<BI", buf, off)
        off += 5
        groups += [g] * n
    assert len(groups) == count
    boids = []
    for i in range(count):
        qx, qy, h = struct.unpack_from("<HHB", buf, off)
        off += 5
        boids.append(((qx + 0.5) * width / 65536, (qy + 0.5) * height / 65536,
                      h, groups[i]))
    obstacles = []
    for _ in range(snap["obstacle_count"]):
        obstacles.append(struct.unpack_from("<Ifff", buf, off))
        off += 16
    targets = []
    for _ in range(snap["target_count"]):
        targets.append(struct.unpack_from("<Bff", buf, off))
        off += 9
    snap.update(boids=boids, obstacles=obstacles, targets=targets, raw=bytes(buf))
    return snap


# What a sanitizer writes to stderr when it finds something.
# The default room's boids in a flockd a test starts, unless the test says
# (a later --boids wins): a room of the server's default 1,000 keeps a
# sanitizer's flockd busy even when nobody watches (about a tenth of a
# core under ASan and TSan), and tests run several flockd processes at once.
TEST_BOIDS = 200

SANITIZER_REPORTS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "WARNING: ThreadSanitizer", "ThreadSanitizer: reported",
                     "runtime error:")


def sanitizer_of(binary):
    """'asan', 'tsan' or None: which sanitizer runtime the binary carries."""
    with open(binary, "rb") as f:
        data = f.read()
    if b"__asan_init" in data:
        return "asan"
    if b"__tsan_init" in data:
        return "tsan"
    return None



def stacks_of(pid):
    """Every thread's stack of a hung process, by gdb when it is installed
    (else a line saying so), for the report of a flockd that did not stop."""
    gdb = shutil.which("gdb")
    if not gdb:
        return "(no gdb here to show where its threads were)\n"
    try:
        out = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt"],
                             capture_output=True, text=True, timeout=60).stdout
    except (subprocess.SubprocessError, OSError) as e:
        return f"(gdb could not show its threads: {e})\n"
    return "its threads when it was stopped:\n" + "\n".join(
        ln for ln in out.splitlines() if ln.startswith(("Thread", "#"))) + "\n"

# ---- TLS: self-signed certificates and what flockd serves ----------------------------

def self_signed_pair(folder, name, days=2, cn="localhost"):
    """A self-signed certificate and its key, made with openssl: the paths
    (FOLDER/NAME.crt, FOLDER/NAME.key); days < 0 makes one that expired."""
    crt, key = os.path.join(folder, name + ".crt"), os.path.join(folder, name + ".key")
    for args in (["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                  "-subj", f"/CN={cn}", "-out", crt + ".csr"],
                 ["x509", "-req", "-in", crt + ".csr", "-signkey", key, "-days", str(days),
                  "-out", crt]):
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    return crt, key


def install_pair(pair, crt, key):
    """Copies a (certificate, key) pair over the files flockd was started
    with, each replaced at once (a SIGHUP never reads half a file)."""
    for src, dst in zip(pair, (crt, key)):
        with open(src, "rb") as f, open(dst + ".tmp", "wb") as g:
            g.write(f.read())
        os.replace(dst + ".tmp", dst)


def unverified():
    """A client TLS context that takes any certificate (the self-signed ones)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def served_certificate(port):
    """The DER certificate flockd presents to a new TLS connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with unverified().wrap_socket(raw) as tls:
            return tls.getpeercert(binary_form=True)


def der_of(crt):
    with open(crt) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


class Flockd:
    """A flockd process with its own port; use as a context manager.
    `env` adds variables to the process's environment. Its output is read
    by background threads (so a chatty server never blocks on a full pipe)
    into `stdout` and `stderr` (every line) and `output` (the last 200 lines
    of both). On leaving the block flockd gets SIGTERM and `stop_timeout`
    seconds to exit 0; it has `start_timeout` seconds to say it listens."""

    def __init__(self, binary, *args, env=None, stop_timeout=30, start_timeout=10):
        self.binary = binary
        self.args = list(args)
        self.env = env
        self.proc = None
        self.port = None
        self.stop_timeout = stop_timeout
        self.start_timeout = start_timeout
        self.stdout, self.stderr, self.output = [], [], []
        self._drains = []

    def _drain(self, stream, lines):
        def run():
            for line in stream:
                lines.append(line)
                self.output.append(line)
                del self.output[:-200]
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self._drains.append(t)

    def __enter__(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        cmd = [self.binary, "--port", "0", "--host", "127.0.0.1", "--boids", str(TEST_BOIDS),
               "--web-root", os.path.join(root, "client", "web")] + self.args
        env = dict(os.environ, **self.env) if self.env else None
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self._drain(self.proc.stderr, self.stderr)
        deadline = time.time() + self.start_timeout
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.stdout.append(line)
            m = re.match(r"flockd listening on https?://(?:\[[^\]]+\]|[^:]+):(\d+)", line)
            if m:
                self.port = int(m.group(1))
                self._drain(self.proc.stdout, self.stdout)
                return self
        self.proc.kill()
        self.proc.wait()
        self._join_drains()
        raise RuntimeError("flockd did not start: " + "".join(self.stderr))

    def _join_drains(self):
        for t in self._drains:
            t.join(5)

    def shutdown_problem(self):
        """After flockd has exited: why its exit was not clean, or None."""
        err = "".join(self.stderr)
        rc = self.proc.returncode
        if rc != 0 or any(r in err for r in SANITIZER_REPORTS):
            return f"flockd exited with status {rc}; its stderr:\n{err}"
        return None

    def __exit__(self, exc_type, exc, tb):
        hung = ""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                hung = stacks_of(self.proc.pid)
                self.proc.kill()
                self.proc.wait()
        self._join_drains()
        problem = self.shutdown_problem()
        if hung:
            problem = f"flockd did not stop within {self.stop_timeout} s of SIGTERM\n" + (
                problem or "") + hung
        if problem and exc_type is None:
            raise AssertionError(problem)
        if problem:  # the test failed already: show why flockd did too
            print(problem, file=sys.stderr, flush=True)

    @property
    def is_tls(self):
        """Started with --tls-cert: https and wss (certificates not verified
        by http(); Client.connect takes ssl= for wss)."""
        return "--tls-cert" in self.args

    @property
    def url(self):
        return f"{'wss' if self.is_tls else 'ws'}://127.0.0.1:{self.port}/ws"

    def http(self, path):
        scheme = "https" if self.is_tls else "http"
        ctx = ssl._create_unverified_context() if self.is_tls else None
        with urllib.request.urlopen(f"{scheme}://127.0.0.1:{self.port}{path}", timeout=5,
                                    context=ctx) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()

    def rooms(self):
        """GET /api/rooms, parsed (PROTOCOL.md §10)."""
        return json.loads(self.http("/api/rooms")[2])

    def room(self, name):
        """This room's entry in /api/rooms, or None."""
        return next((r for r in self.rooms()["rooms"] if r["name"] == name), None)

    def metric(self, name):
        """The value of the /metrics sample `name` (with its labels, if any),
        or None when the server does not report it."""
        for line in self.http("/metrics")[2].splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def terminate(self, timeout=5):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)


class Client:
    """One WebSocket client: replies by id, the latest snapshots in order.
    `welcome` is the newest welcome (`welcomes` all of them; `welcome_at`
    the number of snapshots that came before it), `rosters` the roster
    messages (PROTOCOL.md §6.4), `dilations` the news of the room's clock
    (§6.7, which a loaded sanitizer build may send any time); `replies`
    holds everything else, and
    `messages` every JSON message in arrival order."""

    def __init__(self, ws, headers_only=False):
        self.ws = ws
        self.decode = decode_header if headers_only else decode_snapshot
        self.snapshots = []
        self.replies = []
        self.welcome = None
        self.welcomes = []
        self.welcome_at = 0
        self.rosters = []
        self.dilations = []
        self.messages = []
        self.next_id = 1
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, url, headers_only=False, **kw):
        """Connects and waits for the welcome; `headers_only` keeps only the
        snapshot headers (decode_header)."""
        ws = await websockets.connect(url, subprotocols=["flock.v1"], max_size=None, **kw)
        c = cls(ws, headers_only)
        await c.wait_for(lambda: c.welcome is not None, 5)
        return c

    async def _read(self):
        try:
            async for msg in self.ws:
                if isinstance(msg, bytes):
                    self.snapshots.append((time.time(), self.decode(msg)))
                else:
                    m = json.loads(msg)
                    self.messages.append(m)
                    if m.get("type") == "welcome":
                        self.welcome = m
                        self.welcome_at = len(self.snapshots)
                        self.welcomes.append(m)
                    elif m.get("type") == "roster":
                        self.rosters.append(m)
                    elif m.get("type") == "dilation":
                        self.dilations.append(m)
                    else:
                        self.replies.append(m)
        except websockets.ConnectionClosed:
            pass

    async def wait_for(self, cond, timeout):
        deadline = time.time() + timeout
        while not cond():
            if time.time() > deadline:
                raise AssertionError("timed out waiting")
            await asyncio.sleep(0.01)

    async def send_raw(self, text):
        await self.ws.send(text)

    async def command(self, cmd, timeout=5, **args):
        """Sends {"cmd": cmd, "id": n, **args}; returns its ack or error."""
        i = self.next_id
        self.next_id += 1
        await self.ws.send(json.dumps({"cmd": cmd, "id": i, **args}))
        await self.wait_for(lambda: any(r.get("id") == i for r in self.replies), timeout)
        return next(r for r in self.replies if r.get("id") == i)

    async def join(self, room, role, timeout=5, **args):
        """Sends join; returns its reply. After an ack it also waits for
        the new room's welcome, so later snapshots are the new room's."""
        seen = len(self.welcomes)
        r = await self.command("join", timeout=timeout, room=room, role=role, **args)
        if r["type"] == "ack":
            await self.wait_for(lambda: len(self.welcomes) > seen, timeout)
        return r

    async def next_snapshot(self, after_tick=-1, timeout=5):
        start = len(self.snapshots)
        await self.wait_for(lambda: any(s["tick"] > after_tick
                                        for _, s in self.snapshots[start:]), timeout)
        return next(s for _, s in self.snapshots[start:] if s["tick"] > after_tick)

    async def close(self):
        await self.ws.close()
        await self.reader


def replay(binary, log, *args, timeout=600):
    """Runs `binary --replay log ARGS`; returns (exit status, its last line
    as JSON, stderr)."""
    r = subprocess.run([binary, "--replay", log, *args], capture_output=True, text=True,
                       timeout=timeout)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "{}"
    return r.returncode, json.loads(last), r.stderr


async def joined(d, room, role, headers_only=False, **args):
    """A new client of flockd `d` that has joined `room` as `role`; its join
    ack is `c.ack`."""
    c = await Client.connect(d.url, headers_only=headers_only)
    ack = await c.join(room, role, **args)
    assert ack["type"] == "ack", (room, role, args, ack)
    c.ack = ack
    return c


async def ok(c, cmd, **args):
    """Sends a command that must be acked; returns the ack."""
    r = await c.command(cmd, **args)
    assert r["type"] == "ack", (cmd, args, r)
    return r


async def refused(c, code, cmd, **args):
    """Sends a command that must be refused with `code`; returns the error."""
    r = await c.command(cmd, **args)
    assert r["type"] == "error" and r["code"] == code, (cmd, args, code, r)
    return r


def arg(index, default=None):
    """The script's index-th positional argument (options, which start with
    "--", skipped), or `default`. Scripts take their binaries this way, so
    options may come anywhere on the command line."""
    positional = [a for a in sys.argv[1:] if not a.startswith("--")]
    return positional[index] if index < len(positional) else default


USAGE = """options, after the script's own arguments:
  --functional   run only the tests that do not measure time or rates
  --timing       run only the tests that do (they need the machine to themselves)
  --untimed      run the tests without their bounds on time and rates (a
                 sanitizer build: its slowness is not flockd's); with
                 --timing, what is left may run beside other tests
  --shard=K/N    run only the K-th of N interleaved slices of those tests
  --list         print the names of the selected tests and exit
  NAME...        run only these tests"""


class Suite:
    """A list of test functions (plain or async) and the runner every
    integration script shares. `@suite.test` registers a test;
    `@suite.timing` registers one that measures time or rates, so that
    ctest can run it alone (the script's `--timing` part) while the others
    (`--functional`, in `--shard`s if the script is long) run beside other
    tests. A timing test states each bound on time or a rate with
    `suite.assert_timely`, which `--untimed` turns off (and `suite.untimed`
    says so, for a test that has nothing to measure then): a sanitizer build
    runs the timing tests that way, for everything else they check (replies,
    memory, races), beside other tests. `suite.main()` runs the tests
    the command line selects (USAGE), prints one line per test and ends
    with "N passed, N failed". A name that is no test, or a selection with
    no test in it, is a usage error (exit 2): a renamed or mislabelled test
    must fail its run rather than pass by running nothing."""

    def __init__(self, timeout=120):
        self.tests = []
        self.timed = set()
        self.timeout = timeout
        self.untimed = False

    def test(self, fn):
        self.tests.append(fn)
        return fn

    def timing(self, fn):
        self.timed.add(fn.__name__)
        return self.test(fn)

    def assert_timely(self, ok, detail=None):
        """Asserts a bound on time or a rate, unless the run is --untimed;
        then a bound that does not hold is only printed."""
        if ok:
            return
        if not self.untimed:
            raise AssertionError(detail)
        print(f"  untimed, not asserted: {detail!r}", flush=True)

    async def _run_one(self, fn):
        if asyncio.iscoroutinefunction(fn):
            await asyncio.wait_for(fn(), self.timeout)
        else:
            await asyncio.get_running_loop().run_in_executor(None, fn)

    async def _run(self, tests):
        passed = failed = 0
        for fn in tests:
            t0 = time.time()
            try:
                await self._run_one(fn)
                passed += 1
                print(f"ok   {fn.__name__} ({time.time() - t0:.1f}s)", flush=True)
            except Exception:  # report every failure and go on
                failed += 1
                print(f"FAIL {fn.__name__}", flush=True)
                traceback.print_exc()
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0

    @staticmethod
    def shard(options):
        """(K, N) from --shard=K/N (1 <= K <= N), (1, 1) without it, or
        None if it is malformed."""
        given = [o for o in options if o.startswith("--shard=")]
        if not given:
            return 1, 1
        k, _, n = given[-1][len("--shard="):].partition("/")
        if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
            return None
        return int(k), int(n)

    def select(self, argv, skip_args):
        """The tests argv selects (after `skip_args` positional arguments
        of the script's own), or a usage error as a string."""
        options = [a for a in argv if a.startswith("--")]
        names = [a for a in argv if not a.startswith("--")][skip_args:]
        unknown = [o for o in options
                   if o not in ("--functional", "--timing", "--untimed", "--list")
                   and not o.startswith("--shard=")]
        if unknown:
            return f"unknown option {unknown[0]}"
        shard = self.shard(options)
        if shard is None:
            return "--shard takes K/N with 1 <= K <= N"
        if "--functional" in options and "--timing" in options:
            return "--functional and --timing exclude each other"
        known = {fn.__name__ for fn in self.tests}
        missing = [n for n in names if n not in known]
        if missing:
            return f"no test named {missing[0]}"
        chosen = [fn for fn in self.tests
                  if (not names or fn.__name__ in names)
                  and ("--functional" not in options or fn.__name__ not in self.timed)
                  and ("--timing" not in options or fn.__name__ in self.timed)]
        k, n = shard
        return chosen[k - 1::n] or "the selection holds no test"

    def main(self, skip_args=1):
        """Runs the tests the command line selects; the first `skip_args`
        positional arguments are the script's own (its binaries)."""
        chosen = self.select(sys.argv[1:], skip_args)
        if isinstance(chosen, str):
            print(f"{os.path.basename(sys.argv[0])}: {chosen}\n{USAGE}", file=sys.stderr)
            sys.exit(2)
        if "--list" in sys.argv[1:]:
            print("\n".join(fn.__name__ for fn in chosen))
            sys.exit(0)
        self.untimed = "--untimed" in sys.argv[1:]
        sys.exit(asyncio.run(self._run(chosen)))
