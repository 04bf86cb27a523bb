# flockd — thin front door over CMake. `make run` and `make test` are the
# two commands a new user needs; everything they depend on is installed by
# `make deps` from Debian's packages.

BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
# Seconds per fuzz target: `make fuzz` runs long, `make test` briefly.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := command snapshot snapshot_v2 join config
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)

# Debian packages the build, the tests and the tools need.
DEB_PACKAGES := build-essential cmake pkg-config clang clang-format \
                libwebsockets-dev libcjson-dev libcmocka-dev \
                python3 python3-websockets nodejs chromium libclang-rt-14-dev

# npm packages for the browser and Node tests, pinned by their lock files.
NODE_DIRS := $(dir $(wildcard tests/*/package-lock.json client/*/package-lock.json))

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# clang vectorises the flocking kernel markedly better than gcc-12 (see README).
CC_PICK = $$(command -v clang || command -v cc)

.PHONY: all deps build run test unit-test asan-test tsan-test fuzz fuzz-test format format-check \
        bench bench-rooms clean help

all: build

help:
	@echo "make run      install deps, build, start flockd on http://localhost:8080 (ARGS=... for flags)"
	@echo "make test     install deps, build, run every test (also under ASan+UBSan and TSan)"
	@echo "make bench    flockbench at 1k, 10k, 100k and 300k boids"
	@echo "make bench-rooms  how many 1k-boid rooms flockd runs before ticks run late"
	@echo "              (BENCH_ARGS=... e.g. \"--beside 100000 -- --workers 2\")"
	@echo "make fuzz     run each fuzz target for FUZZ_SECONDS (default 60) under ASan+UBSan"
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

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=$(CC_PICK)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/server/flockd --port 8080 --web-root client/web $(ARGS)

# Unit tests (test_*) run in parallel; tests that start flockd and measure
# rates run one at a time so they do not compete for the CPU.
CTEST_PHASES = ctest --output-on-failure -j$(JOBS) -R '^test_' && \
               ctest --output-on-failure -E '^test_'

unit-test: build
	cd $(BUILD) && $(CTEST_PHASES)

asan-test: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLOCKD_SANITIZE=ON \
	      -DCMAKE_C_COMPILER=$(CC_PICK)
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 sh -c "$(CTEST_PHASES)"

# ThreadSanitizer on the tests that start flockd and drive its threads: the
# integration tests of the server itself (flockd, hostile, rooms, churn),
# whole (under TSan they take about as long as in Release because they
# mostly wait on the clock), integration_flockctl and the unit tests that
# start threads (TSAN_UNITS). They run JOBS at a time, since finding races
# needs no quiet machine; the tests marked RUN_SERIAL for their timing
# bounds (hostile, rooms, churn) still run alone, so flockctl and the units
# cost no time beside integration_flockd. Left out, to keep `make test`
# within 15 minutes: integration_examples (its clients take the same server
# paths as integration_flockd; it runs in Release and under ASan), the other
# unit tests (single-threaded), the browser and node tests (e2e_*, web_*).
# A race is reported on flockd's stderr, not fatal at once (halt_on_error=0),
# so one run shows every race; flockd then exits 66 when it stops, and the
# harness fails the test and prints that stderr. tests/tsan.supp holds the
# suppressions.
TSAN_OPTS := exitcode=66:halt_on_error=0:second_deadlock_stack=1:history_size=4
TSAN_OPTS := $(TSAN_OPTS):suppressions=$(CURDIR)/tests/tsan.supp
TSAN_UNITS := test_pool|test_lobby

tsan-test: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLOCKD_TSAN=ON \
	      -DCMAKE_C_COMPILER=$(CC_PICK)
	cmake --build $(TSAN_BUILD) -j$(JOBS)
	cd $(TSAN_BUILD) && TSAN_OPTIONS=$(TSAN_OPTS) \
	  ctest --output-on-failure -j$(JOBS) -R '^(integration_.+|$(TSAN_UNITS))$$' \
	        -E '^integration_examples$$'

$(FUZZ_BUILD)/CMakeCache.txt:
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLOCKD_SANITIZE=ON \
	      -DFLOCKD_FUZZ=ON -DCMAKE_C_COMPILER=clang

fuzz: deps $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  BUILD_DIR=$(FUZZ_BUILD) tests/fuzz/run.sh $$t $(FUZZ_SECONDS) || exit 1; \
	done

# Each fuzz target briefly, as ctest tests (FLOCKD_FUZZ_SECONDS, 20 s each).
fuzz-test: deps $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	cd $(FUZZ_BUILD) && ctest --output-on-failure -R '^fuzz_'

SOURCES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find server proto client tests -name '*.[ch]')

format-check: deps
	clang-format --dry-run --Werror $(SOURCES)

format:
	clang-format -i $(SOURCES)

test: unit-test format-check asan-test tsan-test fuzz-test
	@echo "make test: all suites passed"

bench: build
	@for n in 1000 10000 100000 300000; do $(BUILD)/server/flockbench --boids $$n --ticks 100 | tail -1; done

# Rooms of 1k boids added one at a time to a real flockd until its ticks run
# late (tests/bench/rooms_bench.py says how; BENCH_ARGS passes options).
bench-rooms: build
	/usr/bin/python3 tests/bench/rooms_bench.py $(BUILD)/server/flockd $(BENCH_ARGS)

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
