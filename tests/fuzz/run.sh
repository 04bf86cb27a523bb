#!/bin/sh
# run.sh TARGET SECONDS [libFuzzer flags...] — fuzzes one target (command,
# snapshot, snapshot_v2, snapshot_v3, join, config, store or cluster) for
# SECONDS, starting from its seed corpus.
# `make fuzz`, `make fuzz-long` (long.sh) and the fuzz_TARGET ctest tests
# (FLOCKD_FUZZ_SECONDS, 10 s each) all run this, so the fuzzer's command
# line is written here only. SECONDS 0 means no limit (with -runs=0 or
# -merge=1 among the flags).
#
# The build is $BUILD_DIR (default: build-fuzz at the top of the
# repository), configured with -DFLOCKD_FUZZ=ON -DCMAKE_C_COMPILER=clang
# (and usually -DFLOCKD_SANITIZE=ON) and built. New inputs go to
# $BUILD_DIR/tests/fuzz/work/TARGET (or $FUZZ_WORK), crashes to
# $BUILD_DIR/tests/fuzz/artifacts/; the corpus in the repository is only
# read. $FUZZ_MORE_DIRS (space-separated) are read after it. The fuzzer's
# directories are, in order: the work directory, the corpus, the others;
# so `FUZZ_WORK=NEW FUZZ_MORE_DIRS=FOUND run.sh TARGET 0 -merge=1` merges
# the corpus and FOUND into NEW (long.sh does). A crash, leak or timeout
# ends the run with a nonzero status (the ctest tests then fail).
# To keep a crash as a seed, minimize it first: fuzz_TARGET -minimize_crash=1 CRASH
set -eu

if [ $# -lt 2 ]; then
    echo "usage: $0 TARGET SECONDS [libFuzzer flags...]" >&2
    echo "       TARGET: command, snapshot, snapshot_v2, snapshot_v3, join, config, store or cluster" >&2
    exit 2
fi
target=$1
seconds=$2
shift 2

here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$here/../../build-fuzz}
bin=$build/tests/fuzz/fuzz_$target
corpus=$here/corpus/$target
if [ ! -d "$corpus" ]; then
    echo "run.sh: no corpus for '$target' in $here/corpus" >&2
    exit 2
fi
if [ ! -x "$bin" ]; then
    echo "run.sh: $bin is not built (cmake -DFLOCKD_FUZZ=ON -DCMAKE_C_COMPILER=clang ...)" >&2
    exit 2
fi

# Inputs of up to 8192 bytes, but a checkpoint holds 256 groups' parameters
# (21 KB with 6 boids) and the tiles message among the cluster seeds has
# 14 KB: cut to 8192 bytes, those seeds were refused at their length.
case $target in
store) max_len=65536 ;;
cluster) max_len=32768 ;;
*) max_len=8192 ;;
esac

work=${FUZZ_WORK:-$build/tests/fuzz/work/$target}
artifacts=$build/tests/fuzz/artifacts
mkdir -p "$work" "$artifacts"
# shellcheck disable=SC2086 # FUZZ_MORE_DIRS is a list of directories
exec "$bin" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 \
    -dict="$here/$target.dict" -artifact_prefix="$artifacts/$target-" "$@" "$work" "$corpus" \
    ${FUZZ_MORE_DIRS:-}
