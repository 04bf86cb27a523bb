# flockd — thin front door over CMake. `make run` and `make test` are the
# two commands a new user needs, `make check` the one a developer runs after
# each change (tests/README.md); everything they depend on is installed
# by `make deps` from Debian's packages.

BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
GCC_BUILD  ?= build-gcc
# Seconds per fuzz target for `make fuzz`; `make test` fuzzes each for
# FLOCKD_FUZZ_SECONDS (10 s, tests/fuzz/CMakeLists.txt), two at a time.
FUZZ_SECONDS ?= 60
# `make fuzz-long` (tests/fuzz/long.sh): each target until FUZZ_LONG_SECONDS
# or until its coverage has not grown for FUZZ_PLATEAU_SECONDS, then the
# corpus grows by what it found, minimized. FUZZ_TARGETS=store: one target.
FUZZ_LONG_SECONDS ?= 3600
FUZZ_PLATEAU_SECONDS ?= 600
FUZZ_TARGETS := command snapshot snapshot_v2 snapshot_v3 join config store cluster
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
# Tests that do not measure time mostly wait on the clock: run twice as
# many at a time as there are cores.
TEST_JOBS  ?= $(shell echo $$(( $(JOBS) * 2 )))

# Debian packages the build, the tests and the tools need (gdb: a test
# that finds flockd hung at SIGTERM reports where its threads were).
DEB_PACKAGES := build-essential cmake pkg-config clang clang-format \
                libwebsockets-dev libwebsockets-evlib-ev libev-dev \
                libcjson-dev libcmocka-dev zlib1g-dev libssl-dev \
                python3 python3-websockets nodejs chromium libclang-rt-14-dev openssl \
                nats-server libnats-dev liblua5.4-dev python3-numpy python3-pip python3-venv libmurmurhash2 gdb

# npm packages, pinned by their lock files: the browser tests' (tests/e2e),
# the client library's (client/js: ws) and the examples' (client/examples,
# which links client/js and so finds ws there).
NODE_DIRS := $(dir $(wildcard tests/*/package-lock.json client/*/package-lock.json))

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# clang vectorises the flocking kernel markedly better than gcc-12
# (server/bench/README.md).
CC_PICK = $$(command -v clang || command -v cc)

.PHONY: all deps build run check check-tests test release-test asan-test tsan-test fuzz fuzz-long \
        fuzz-test asan-build tsan-build fuzz-build gcc-build gate-light gate-load \
        release-light asan-light tsan-light browser-lane churn-lane churn-lane-release fuzz-parallel \
        serial-lane soak-lane \
        format format-check bench bench-rooms bench-cluster fog-soak bench-viewer script-match chaos \
        soak soak-short overload-bench clean help

all: build

help:
	@echo "make run      install deps, build, start flockd on http://localhost:8080 (ARGS=... for flags)"
	@echo "make check    after each change: build, format check, unit and web tests, the"
	@echo "              integration tests that do not measure time (Release build), and"
	@echo "              meanwhile the whole tree built with gcc as well (make gcc-build)"
	@echo "make test     the full gate: every test in Release, again under ASan+UBSan (without"
	@echo "              bounds on time), the server's threaded tests under TSan, each fuzz"
	@echo "              target briefly"
	@echo "make release-test / asan-test / tsan-test / fuzz-test   one build's part of make test"
	@echo "make gcc-build  every target built with gcc -O0 in $(GCC_BUILD): gcc's warnings fail it"
	@echo "make bench    flockbench at 1k, 10k, 100k and 300k boids"
	@echo "make overload-bench  a 1k-boid room beside one given ten times what the machine ticks,"
	@echo "              three runs: the small room's tick lateness, the big one's dilation"
	@echo "              (BENCH_ARGS=... e.g. \"--workers 1\" or \"--boids 2000000\")"
	@echo "make bench-rooms  how many 1k-boid rooms flockd runs before ticks run late"
	@echo "              (BENCH_ARGS=... e.g. \"--beside 100000 -- --workers 2\")"
	@echo "make bench-cluster  three nodes on NATS: relay overhead, kill -9 failover times"
	@echo "              (BENCH_ARGS=... e.g. \"--trials 20 --boids 5000\")"
	@echo "make bench-viewer  the viewer (version 3) in headless Chromium on 250,000 boids: fps,"
	@echo "              KB/s and screenshots at full zoom-out and at 1:1 (BENCH_ARGS=\"--boids N\")"
	@echo "make fog-soak  an rts room of 4 teams of 500 units for 5 minutes: counts the enemy"
	@echo "              units a player's version 3 frames showed out of sight (BENCH_ARGS=--seconds=N)"
	@echo "make script-match  a 3-minute flockwars match recorded and replayed with --verify,"
	@echo "              and scriptbench: what the sample's script costs a tick of 4 x 500 units"
	@echo "make chaos    a cluster of three nodes under kill -9, SIGSTOP and NATS restarts for"
	@echo "              CHAOS_SECONDS (1800), seeded (CHAOS_SEED): no acked command lost or doubled"
	@echo "make soak     one flockd under mixed load for SOAK_SECONDS (3600): its heap, RSS,"
	@echo "              descriptors and threads must stay flat after the warm-up (tests/soak/soak.py)"
	@echo "make soak-short  the same for 3 minutes, RSS printed, not judged (3 min 10 s; 0.6 of a core)"
	@echo "make fuzz     run each fuzz target for FUZZ_SECONDS (default 60) under ASan+UBSan"
	@echo "make fuzz-long  each fuzz target for FUZZ_LONG_SECONDS (3600) or until its coverage"
	@echo "              stops growing for FUZZ_PLATEAU_SECONDS (600); the corpus grows by what"
	@echo "              it found, minimized; a table of coverage before and after (FUZZ_TARGETS=store)"
	@echo "make format   reformat the C sources with clang-format"
	@echo "make clean    remove build folders"

deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all present"; fi
	@for d in $(NODE_DIRS); do \
	  if [ ! -d $$d/node_modules ] || [ $$d/package-lock.json -nt $$d/node_modules ]; then \
	    echo "deps: npm ci in $$d"; (cd $$d && npm ci --no-audit --no-fund --loglevel=error) || exit 1; \
	  fi; \
	done

# ---- builds ---------------------------------------------------------------------

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=$(CC_PICK)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLOCKD_SANITIZE=ON \
	      -DCMAKE_C_COMPILER=$(CC_PICK)

asan-build: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j$(JOBS)

# ThreadSanitizer runs the tests that start flockd and drive its threads:
# the integration tests of the server itself (flockd, hostile, rooms,
# churn, workers), integration_flockctl and the unit tests that start
# threads (TSAN_UNITS: the pool, the lobby, steps split over threads, tile parts
# encoded by whichever thread asks first);
# only what they need is built. Left out: integration_examples and the
# client libraries' tests (pyclient, jsclient, jsexamples: their clients take
# the same server paths as integration_flockd; they run in Release and under
# ASan), integration_cluster_secure (once signed in to NATS its nodes take
# the paths integration_cluster runs here), integration_script, _rtsrooms
# and _squads (a room's rules, teams and squads are its tick thread's; what
# they send members goes through the boards integration_views and _rooms
# drive here), the untimed parts of flockd, flockctl, hostile
# and replay (why: at TREES below), the other unit tests (single-threaded),
# the browser and node tests (e2e_*, web_*). The build's tests carry
# TSAN_OPTIONS (tests/CMakeLists.txt): a race fails the test, and
# tests/tsan.supp holds the suppressions.
TSAN_UNITS := test_pool test_lobby test_stepper test_step_forked test_tiles
space := $(subst ,, )
TSAN_SELECT = -R '^(integration_.+|$(subst $(space),|,$(TSAN_UNITS)))$$' \
               -E '^(integration_(examples|pyclient|jsclient|jsexamples|cluster_secure|script|rtsrooms|squads)(_.+)?|integration_(flockd|flockctl|hostile|replay)_untimed)$$'

$(TSAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLOCKD_TSAN=ON \
	      -DCMAKE_C_COMPILER=$(CC_PICK)

tsan-build: deps $(TSAN_BUILD)/CMakeCache.txt
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target flockd flockctl $(TSAN_UNITS)

$(FUZZ_BUILD)/CMakeCache.txt:
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLOCKD_SANITIZE=ON \
	      -DFLOCKD_FUZZ=ON -DCMAKE_C_COMPILER=clang

fuzz-build: deps $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))

# Every target (flockd, the tools, the tests) built with gcc, the compiler
# the other builds do not use (CC_PICK takes clang), so that gcc's warnings
# (-Werror, as everywhere) fail `make check` too. At -O0, the quickest:
# about 13 s of CPU; gcc -O1 warns of a "maybe uninitialized" that is not
# (proto_deflate.c, minimum_redundancy), -O3 takes twice as long. Its
# output goes to
# $(GCC_BUILD)/build.log; when it fails, its errors are shown.
GCC_BUILD_RUN = mkdir -p $(GCC_BUILD) && \
  { [ -f $(GCC_BUILD)/CMakeCache.txt ] || \
    cmake -S . -B $(GCC_BUILD) -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Debug \
          -DCMAKE_C_FLAGS_DEBUG=-O0; } >$(GCC_BUILD)/build.log 2>&1 && \
  cmake --build $(GCC_BUILD) -j$(JOBS) -- --no-print-directory >>$(GCC_BUILD)/build.log 2>&1 || \
  { grep -A4 -E 'error|warning' $(GCC_BUILD)/build.log | head -n 60 || tail -n 30 $(GCC_BUILD)/build.log; \
    echo "gcc-build: failed; all of it in $(GCC_BUILD)/build.log"; false; }

gcc-build: deps
	$(call phase,gcc build of every target ($(GCC_BUILD); -O0; a warning fails it),$(GCC_BUILD_RUN))

run: build
	$(BUILD)/server/flockd --port 8080 --web-root client/web $(ARGS)

# ---- tests ----------------------------------------------------------------------
#
# ctest labels (tests/CMakeLists.txt): unit, web, integration, e2e, fuzz,
# soak (soak_short: 3 minutes of mixed load, which only `make test`'s
# soak-lane runs, beside the serial tests; `make soak-short` runs it
# alone); serial for the tests that must run alone (they measure time or rates, or,
# e2e_viewer, fail on a busy machine), heavy for those that keep about a
# core busy throughout (a browser, 100,000 connections). A build's tests
# run in two parts: everything not serial, TEST_JOBS at a time (it waits
# on the clock rather than measuring it; ctest runs the heavy ones one at a
# time), then the serial tests one at a time. An empty selection is an
# error, so a renamed test or label cannot pass unnoticed.

CTEST := ctest --output-on-failure --no-tests=error
# When the first make began: the parts of make test, each a make of its
# own, say when they ended counted from it.
ifndef FLOCKD_MAKE_T0
FLOCKD_MAKE_T0 := $(shell date +%s)
endif
export FLOCKD_MAKE_T0
SINCE_T0 = $$(( $$(date +%s) - $(FLOCKD_MAKE_T0) )) s
# $(call phase,TITLE,COMMAND): COMMAND, framed by TITLE, how long it took
# and when it ended.
phase = @echo "== $(1)"; t0=$$(date +%s); $(2) && \
        echo "== $(1): passed in $$(( $$(date +%s) - t0 )) s (at $(SINCE_T0))"

# The builds whose tests run (TREE: release, asan or tsan): folder, name and
# which of its tests. Bounds on time and rates are asserted in Release
# only: a sanitizer build runs the timing tests of the integration scripts
# untimed (NAME_untimed, tests/CMakeLists.txt says why), beside the other
# light tests, so its serial part is test_pool alone. Left out, to keep
# `make test` within nine minutes:
# - under ASan, every browser test but e2e_lobby (the viewer's, squads',
#   replay's, TLS's and the cluster's pages): they drive and time the page,
#   which ASan does not instrument; what a browser makes flockd do (static
#   files, Chromium's WebSocket, commands, joins, a restart) runs under ASan
#   in e2e_lobby and the integration tests (squads, replay, TLS, cluster);
# - under ASan, the tests that run no code of the build (the Python and
#   JavaScript libraries' own tests, the schema's docs check);
# - in Release, the light integration tests the ASan+UBSan build runs
#   (release-light below); Release runs every timing part, the browser
#   tests, the chaos run and the tests only it registers;
# - under TSan, the untimed parts of integration_flockd, _flockctl,
#   _hostile and _replay (85 s, 33 s of it at once at -j3): TSan looks for
#   races, and what those parts drive runs there in the scripts' functional
#   parts (hostile clients, crashes and restarts included); the untimed
#   parts of rooms, cluster and netthreads (rooms and nodes ticking on
#   several threads under load, both service threads at full rate) run.
TREES := release asan tsan
dir_release := $(BUILD)
dir_asan := $(ASAN_BUILD)
dir_tsan := $(TSAN_BUILD)
name_release := Release
name_asan := ASan+UBSan
name_tsan := TSan
tests_asan := -E '^(e2e_(viewer(3|_timing)?|squads|replay|tls|cluster)|web_decoder|test_(pyclient_.+|schema_docs))$$'
tests_tsan = $(TSAN_SELECT)
# $(call part,TREE,TITLE,CTEST OPTIONS): some of TREE's tests.
part = $(call phase,$(name_$(1)): $(2),cd $(dir_$(1)) && $(CTEST) $(3) $(tests_$(1)))
parallel_part = $(call part,$(1),tests that may run in parallel,-j$(TEST_JOBS) -LE '^(serial|soak)$$')
serial_part = $(call part,$(1),serial tests (one at a time),-L '^serial$$')
# Fuzzers are single-threaded: two at a time on the usual two cores.
FUZZ_TESTS = $(call phase,fuzz targets (two at a time),cd $(FUZZ_BUILD) && $(CTEST) -j2 -L '^fuzz$$')

# After each change: the Release build, the format check (quick, so first),
# then the unit and web tests and the integration tests that do not measure
# time, while the gcc build (gcc-build) compiles beside them: none of those
# tests measures time, and they leave most of the CPU to it. Not here: the
# serial tests, e2e, sanitizers, fuzzing and the longest unit test,
# test_step_forked_heavy (make test).
CHECK_UNITS = cd $(BUILD) && $(CTEST) -j$(TEST_JOBS) -L '^(unit|web)$$' -E '^test_step_forked_heavy$$'
CHECK_INTEGRATION = cd $(BUILD) && $(CTEST) -j$(TEST_JOBS) -L '^integration$$' -LE '^serial$$'
check: build format-check
	@$(MAKE) --no-print-directory -j2 check-tests gcc-build
	@echo "make check: passed in $(SINCE_T0)"

check-tests:
	$(call phase,unit and web tests,$(CHECK_UNITS))
	$(call phase,integration tests that do not measure time,$(CHECK_INTEGRATION))

# One build's share of `make test`, on its own.
release-test: build
	$(call parallel_part,release)
	$(call serial_part,release)

asan-test: asan-build
	$(call parallel_part,asan)
	$(call serial_part,asan)

tsan-test: tsan-build
	$(call parallel_part,tsan)
	$(call serial_part,tsan)

fuzz-test: fuzz-build
	$(FUZZ_TESTS)

# The full gate (CI runs this), ordered so that what is sensitive to load
# never shares the machine with what loads it:
# 1. the Release build; then, as a graph `make -j` runs, the other builds
#    (one after another, ASan first) and the format check, each build's
#    light tests (neither serial nor heavy, GATE_JOBS at a time per build)
#    as soon as that build is done, and, once all compiling is done, the
#    heavy browser test (e2e_lobby) of Release then ASan;
# 2. in the same graph, once the TSan light tests and the browser lane are
#    done (the ASan light tests, the longest, still running), the fuzz
#    targets, two at a time, beside two lanes of heavy tests, one at a
#    time each: Release's heavy integration tests (the chaos run,
#    churn; dilation: a room of a million boids overloaded), and the
#    sanitizer builds' ones
#    and the Release build's heavy unit test (test_step_forked_heavy: a
#    100k-boid room for 400 ticks on 1, 2 and 7 threads; under ASan its
#    small variant runs with the light tests) (none measures time: fuzzers
#    only fuzz less, churn checks memory, while all load the machine);
# 3. the serial tests, one at a time, build after build: Release's timing
#    parts, e2e_viewer and test_pool; test_pool alone in the sanitizer
#    builds, which run the timing parts untimed with their light tests;
#    beside them the soak's 3-minute run (soak_short: about half a core;
#    one test at a time leaves a core idle, and the timing tests compare
#    with baselines of the same run or bound what keeps within one core).
# Each part prints its output when it is done, and how long it took.
GATE_JOBS ?= 3
test: build
	@echo "== make test: Release build done after $(SINCE_T0)"
	@$(MAKE) --no-print-directory -j6 --output-sync=target GATE_ORDER=1 gate-light gate-load
	@echo "== make test: builds, light tests, fuzz and churn done after $(SINCE_T0)"
	@$(MAKE) --no-print-directory -j2 --output-sync=target serial-lane soak-lane
	@echo "make test: all suites passed in $(SINCE_T0)"

serial-lane:
	$(call serial_part,release)
	$(call serial_part,asan)
	$(call serial_part,tsan)
soak-lane:
	$(call part,release,the soak's 3 minutes (beside the serial tests; its figures too),-V -L '^soak$$')

ALL_BUILDS := build asan-build tsan-build fuzz-build
gate-light: $(TREES:%=%-light) browser-lane format-check
# In that graph the sanitizer builds run one after another, ASan first
# (its light tests take longest), rather than all three at once, and the
# lanes that load the machine take the place of the TSan light tests and
# the browser lane beside the ASan light tests' last minute.
ifdef GATE_ORDER
tsan-build: | asan-build
fuzz-build: | tsan-build
fuzz-parallel churn-lane churn-lane-release: | tsan-light browser-lane
endif
gate-load: fuzz-parallel churn-lane churn-lane-release
asan-light tsan-light: %-light:
	$(call part,$*,light tests,-j$(GATE_JOBS) -LE '^(serial|heavy|soak)$$')
# Release's light integration tests are the ASan+UBSan build's too (the
# same scripts, under more checks): the gate runs those only Release
# registers (label release_only) beside its unit and web tests. `make
# check` and `make release-test` run them all.
release-light: build
	$(call part,release,light unit and web tests,-j$(GATE_JOBS) -LE '^(serial|heavy|soak|integration)$$')
	$(call part,release,light integration tests only Release runs,-j$(GATE_JOBS) -L '^release_only$$' -LE '^(serial|heavy)$$')
asan-light: asan-build
tsan-light: tsan-build
lane_part = $(call part,$(1),heavy $(2) tests (one at a time),-L '^heavy$$' -L '^$(2)$$')
browser-lane: $(ALL_BUILDS)
	$(call lane_part,release,e2e)
	$(call lane_part,asan,e2e)
# Two lanes: Release's heavy integration tests (the chaos run, churn,
# dilation) beside the others one at a time.
churn-lane:
	$(call lane_part,release,unit)
	$(call lane_part,asan,integration)
	$(call lane_part,tsan,integration)
churn-lane-release:
	$(call lane_part,release,integration)
fuzz-parallel:
	$(FUZZ_TESTS)

# The chaos run by hand (tests/chaos/chaos.py): `make test` runs 30 s of it.
CHAOS_SECONDS ?= 1800
CHAOS_SEED ?= 1
chaos: build
	/usr/bin/python3 tests/chaos/chaos.py $(BUILD)/server/flockd --seconds $(CHAOS_SECONDS) \
	  --seed $(CHAOS_SEED) --logs $(BUILD)/chaos-logs

# The soak (tests/soak/soak.py, tests/README.md "The soak"): one flockd over
# TLS, checkpointing and recording, under churn, commands at and past the
# rate limit, slow consumers, viewers with views, matches and SIGHUPs for
# SOAK_SECONDS; fails when its heap in use grows more than 2 MiB from the
# warm-up's end to the end, when its RSS drifts more than 2 MiB after the
# warm-up (runs of 10 minutes or more), when its descriptors or threads
# grow, or when a client that keeps the rules gets an error. The samples:
# $(BUILD)/soak*.csv, a plot of them: $(BUILD)/soak*.svg. soak-short, 3
# minutes, needs nothing but the Release build (0.5-0.65 of a core for
# flockd and the driver together).
SOAK_SECONDS ?= 3600
SOAK = /usr/bin/python3 tests/soak/soak.py $(BUILD)/server/flockd
soak: build
	$(call phase,soak of $(SOAK_SECONDS) s,$(SOAK) --seconds $(SOAK_SECONDS) \
	  --csv $(BUILD)/soak.csv --svg $(BUILD)/soak.svg)

soak-short: build
	$(call phase,soak of 180 s,$(SOAK) --seconds 180 \
	  --csv $(BUILD)/soak-short.csv --svg $(BUILD)/soak-short.svg)

# The room scripts' long run: `make test` records an 8-s match.
script-match: build
	FLOCKD_SCRIPT_MATCH_SECONDS=180 /usr/bin/python3 tests/integration/test_script.py \
	  $(BUILD)/server/flockd a_recorded_scripted_match_replays_with_verify
	$(BUILD)/server/scriptbench --ticks 3000

fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  BUILD_DIR=$(FUZZ_BUILD) tests/fuzz/run.sh $$t $(FUZZ_SECONDS) || exit 1; \
	done

fuzz-long: fuzz-build
	BUILD_DIR=$(FUZZ_BUILD) FUZZ_LONG_SECONDS=$(FUZZ_LONG_SECONDS) \
	  FUZZ_PLATEAU_SECONDS=$(FUZZ_PLATEAU_SECONDS) tests/fuzz/long.sh $(FUZZ_TARGETS)

SOURCES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find server proto client tests -name '*.[ch]')

format-check: deps
	clang-format --dry-run --Werror $(SOURCES)

format:
	clang-format -i $(SOURCES)

bench: build
	@for n in 1000 10000 100000 300000; do $(BUILD)/server/flockbench --boids $$n --ticks 100 | tail -1; done

# Overload (server/bench/README.md, "Overload"): a 1,000-boid room beside
# one given ten times what the machine ticks, on the pool of tick threads
# without the network, three runs: how late the small room's ticks start,
# and the big room's dilation second by second.
overload-bench: build
	@for k in 1 2 3; do echo "== run $$k of 3"; \
	  $(BUILD)/server/flockbench --overload $(BENCH_ARGS) || exit 1; done

# Rooms of 1k boids added one at a time to a real flockd until its ticks run
# late (tests/bench/rooms_bench.py says how; BENCH_ARGS passes options).
bench-rooms: build
	/usr/bin/python3 tests/bench/rooms_bench.py $(BUILD)/server/flockd $(BENCH_ARGS)

bench-cluster: build
	/usr/bin/python3 tests/bench/cluster_bench.py $(BUILD)/server/flockd $(BENCH_ARGS)

# The fog of tests/integration/test_views.py for 5 minutes at 4 teams of 500
# units, by hand: prints the leaks it counted (exit 1 if any).
fog-soak: build
	/usr/bin/python3 tests/integration/test_views.py $(BUILD)/server/flockd --fog-soak $(BENCH_ARGS)

# The viewer on protocol version 3 in headless Chromium, 1280 x 800, on a
# room of 250,000 boids (30 ticks, 20 snapshots a second): frames drawn per
# second, KB/s received, decode and draw times, the level of detail, a
# screenshot each at full zoom-out and at 1:1 ($(BUILD)/bench-viewer-*.png).
bench-viewer: build
	node tests/bench/viewer_bench.mjs $(BUILD)/server/flockd $(BUILD) $(BENCH_ARGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) build-gcc build-clang

# The container image (docker/): built with docker or podman, whichever
# works here (a docker client without a daemon does not count); when no
# registry serves the Debian base, it is made once with debootstrap and
# cached. docker/image.sh says how; podman runs with docker/containers.conf.
IMAGE ?= flockd:latest

.PHONY: image-deps image-base image image-test

# Podman and its helpers when no engine works, debootstrap, podman-compose,
# the image test's Python modules; nothing when all are there.
image-deps:
	docker/image.sh deps

image-base: image-deps
	docker/image.sh base

image: image-deps
	IMAGE=$(IMAGE) docker/image.sh build

# Runs the image as a user would (tests/image/test_image.py): health,
# viewer, snapshots, non-root user, SIGTERM, admin token, the compose file.
image-test: image
	IMAGE=$(IMAGE) /usr/bin/python3 tests/image/test_image.py
