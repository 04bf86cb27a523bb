#!/bin/sh
# long.sh [TARGET...] — fuzzes each target (default: all) for depth, one at
# a time, then grows the repository's corpus by what it found, minimized.
# `make fuzz-long` runs it (FUZZ_TARGETS=store for one target).
#
#   FUZZ_LONG_SECONDS     longest run per target (default 3600)
#   FUZZ_PLATEAU_SECONDS  stop a target early once its features (libFuzzer's
#                         ft:) have not grown for this long (default 600)
#   FUZZ_MERGE            0: measure only, leave the corpus alone (default 1)
#   BUILD_DIR             the fuzz build (default build-fuzz), as for run.sh
#
# For each target: a run from the corpus alone (an empty work directory in
# $BUILD_DIR/tests/fuzz/long/TARGET), whose INITED line is the corpus's
# coverage before; then `-merge=1` of the corpus and the new inputs into a
# fresh directory that starts with the corpus's named seeds (the vectors and
# regress_* inputs README.md describes; the fuzzer names its own inputs by
# their SHA-1), so the seeds stay and only inputs that add features join
# them; that directory replaces corpus/TARGET, and a run over it alone gives
# the coverage after. A crash, leak or timeout marks the target FAILED,
# keeps its corpus as it was and makes the script exit 1 after the others.
# Never pause a run (SIGSTOP, a suspended shell): an input that was running
# for longer than libFuzzer's -timeout when it wakes counts as a timeout.
# Coverage, edges (cov:) and features (ft:), is libFuzzer's count over the
# whole binary: the harness and the libraries it links.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$(cd "$here/../.." && pwd)/build-fuzz}
export BUILD_DIR="$build"
seconds=${FUZZ_LONG_SECONDS:-3600}
plateau=${FUZZ_PLATEAU_SECONDS:-600}
merge=${FUZZ_MERGE:-1}
[ $# -gt 0 ] || set -- command snapshot snapshot_v2 snapshot_v3 join config store cluster

top=$build/tests/fuzz/long
mkdir -p "$top"
table=$top/table
: >"$table"
failed=""

# The figure after "NAME: " on the last line of FILE that has one, or "?".
figure() {
    v=$(grep -a -o "$1: [0-9]*" "$2" | tail -n 1 | sed 's/.*: //')
    echo "${v:-?}"
}

# Files in DIR, and their bytes.
files() { find "$1" -type f | wc -l | tr -d ' '; }
bytes() { find "$1" -type f -exec cat {} + | wc -c | tr -d ' '; }

# Runs the fuzzer on TARGET, writing to WORK and LOG, in the background until
# it ends, the time is up or its features stop growing for $plateau seconds;
# sets rc, stop and elapsed.
session() {
    FUZZ_WORK=$2 "$here/run.sh" "$1" "$seconds" >"$3" 2>&1 &
    pid=$!
    start=$(date +%s)
    grew=$start
    best=-1
    stop="time"
    poll=2
    while kill -0 "$pid" 2>/dev/null; do
        sleep "$poll"
        now=$(date +%s)
        ft=$(tail -n 200 "$3" | grep -a -o 'ft: [0-9]*' | tail -n 1 | sed 's/.*: //')
        if [ -n "$ft" ] && [ "$ft" -gt "$best" ]; then
            best=$ft
            grew=$now
        elif [ $((now - grew)) -ge "$plateau" ] && kill -INT "$pid" 2>/dev/null; then
            stop="plateau"
            break
        fi
    done
    rc=0
    wait "$pid" || rc=$?
    elapsed=$(($(date +%s) - start))
}

# The minimized union of the corpus and the work directory WORK becomes the
# corpus; the old one is kept in OLD.
merge_into_corpus() {
    corpus=$here/corpus/$1
    fresh=$top/$1.merged
    rm -rf "$fresh" "$3"
    mkdir -p "$fresh"
    find "$corpus" -type f | grep -v -E '/[0-9a-f]{40}$' | while read -r f; do cp "$f" "$fresh/"; done
    if ! FUZZ_WORK=$fresh FUZZ_MORE_DIRS=$2 "$here/run.sh" "$1" 0 -merge=1 >"$top/$1.merge.log" 2>&1; then
        echo "long: $1: the merge failed, the corpus stays as it was; see $top/$1.merge.log" >&2
        return 1
    fi
    grep -a 'MERGE-OUTER: [0-9]* new files' "$top/$1.merge.log" | sed "s/^/long: $1: /"
    cp -R "$corpus" "$3"
    find "$corpus" -type f -delete
    cp "$fresh"/* "$corpus/"
}

# The coverage of the corpus alone: INITED's cov and ft, into after_cov and after_ft.
measure() {
    empty=$top/$1.empty
    rm -rf "$empty"
    mkdir -p "$empty"
    FUZZ_WORK=$empty "$here/run.sh" "$1" 0 -runs=0 >"$top/$1.measure.log" 2>&1
    after_cov=$(figure cov "$top/$1.measure.log")
    after_ft=$(figure ft "$top/$1.measure.log")
}

for t in "$@"; do
    corpus=$here/corpus/$t
    work=$top/$t
    log=$top/$t.log
    rm -rf "$work"
    mkdir -p "$work"
    files_before=$(files "$corpus")
    bytes_before=$(bytes "$corpus")
    echo "long: $t: up to $seconds s, stopping after $plateau s without new features; log $log"
    session "$t" "$work" "$log"
    inited=$(grep -a -m 1 'INITED' "$log" || true)
    cov0=$(echo "$inited" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft0=$(echo "$inited" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    execs=$(grep -a 'stat::number_of_executed_units:' "$log" | sed 's/.*: *//')
    echo "long: $t: start cov: ${cov0:-?} ft: ${ft0:-?} ($files_before files)"
    echo "long: $t: end   cov: $(figure cov "$log") ft: $(figure ft "$log") after $elapsed s ($stop), ${execs:-?} executions"
    if grep -a -q 'Test unit written to' "$log" || { [ "$stop" = time ] && [ "$rc" -ne 0 ]; }; then
        echo "long: $t: FAILED (status $rc); the log ends:" >&2
        tail -n 40 "$log" >&2
        failed="$failed $t"
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "FAILED" "" "" "${execs:-?}" "$stop" >>"$table"
        continue
    fi
    if [ "$merge" = 1 ] && ! merge_into_corpus "$t" "$work" "$top/$t.old"; then
        failed="$failed $t"
        continue
    fi
    measure "$t"
    printf '%s\t%s → %s\t%s → %s\t%s → %s (%s → %s bytes)\t%s\t%s %s s\n' "$t" "${cov0:-?}" \
        "$after_cov" "${ft0:-?}" "$after_ft" "$files_before" "$(files "$corpus")" "$bytes_before" \
        "$(bytes "$corpus")" "${execs:-?}" "$stop" "$elapsed" >>"$table"
done

echo
printf '| target | edges (cov) | features (ft) | corpus files | executions | stopped |\n'
printf '|---|---|---|---|---:|---|\n'
sed 's/\t/ | /g; s/^/| /; s/$/ |/' "$table"
if [ -n "$failed" ]; then
    echo "long: FAILED:$failed (inputs in $build/tests/fuzz/artifacts/)" >&2
    exit 1
fi
