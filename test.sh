#!/usr/bin/env bash
# The test command (README): installs what the tests need where it can (.ci/install), runs
# every test (`cargo test --workspace`; other `cargo test` arguments may be given instead,
# e.g. `./test.sh --test integration -- NAME`), then says how many tests did not run and
# why. A test that cannot run here fails, unless JDWPMUX_TEST_ALLOW_SKIP=1 lets it be
# skipped; skipped or failed, each is recorded (testkit/src/skip.rs) and named here, and the
# run ends non-zero if any did not run and skipping was not allowed.
set -euo pipefail
cd "$(dirname "$0")"

bash .ci/install

target=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
mkdir -p "$target"
record="$target/jdwpmux-not-run.txt"
: > "$record"
export JDWPMUX_TEST_NOT_RUN_FILE="$record"

[ "$#" -gt 0 ] || set -- --workspace
status=0
# Every test binary runs even when one fails, so the count below covers them all.
cargo test --no-fail-fast "$@" || status=$?

n=$(wc -l < "$record")
if [ "$n" -eq 0 ]; then
    echo "test.sh: no test was left out for want of what it needs"
else
    tests=tests
    [ "$n" -ne 1 ] || tests=test
    echo "test.sh: $n $tests did not run, for these reasons (each test is named in $record):"
    cut -f2 "$record" | sort | uniq -c | sort -rn
    if [ "${JDWPMUX_TEST_ALLOW_SKIP:-}" = 1 ]; then
        echo "test.sh: skipping was allowed (JDWPMUX_TEST_ALLOW_SKIP=1): these were not tested"
    else
        echo "test.sh: the run fails: run ./test.sh as root (it installs what they need), or allow skipping with JDWPMUX_TEST_ALLOW_SKIP=1"
        [ "$status" -ne 0 ] || status=1
    fi
fi
exit "$status"
