#!/usr/bin/env bash
# Fuzzes one target (or all) for a given time with AFL++ on the stable toolchain:
#   fuzz/run.sh TARGET SECONDS      e.g. fuzz/run.sh ddm 600
#   fuzz/run.sh all SECONDS         each target in turn, SECONDS each
# Targets: codec handshake ddm heapmap capture control adb config procscan farlink nearlink (see src/fuzzing/).
# Starts from fuzz/corpus/TARGET, writes AFL's state to fuzz/out/TARGET, and prints the
# executions, the paths found and the crashes. Runs under nice: the machine is shared.
# Needs cargo-afl (installed here when missing: `cargo install cargo-afl`, which builds AFL++).
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$self")"

targets=(codec handshake ddm heapmap capture control adb config procscan farlink nearlink)
if [ $# -ne 2 ]; then
    echo "usage: $0 TARGET|all SECONDS   (targets: ${targets[*]})" >&2
    exit 2
fi
which="$1" secs="$2"
if [ "$which" = all ]; then
    for t in "${targets[@]}"; do "$self" "$t" "$secs"; done
    exit 0
fi
[ -d "corpus/$which" ] || { echo "no such target: $which (targets: ${targets[*]})" >&2; exit 2; }

command -v cargo-afl >/dev/null 2>&1 || cargo install cargo-afl --locked
# JDWPMUX_FUZZ_NO_BUILD=1 runs the binary already built (several targets side by side
# while the source changes).
if [ -z "${JDWPMUX_FUZZ_NO_BUILD:-}" ]; then
    nice -n 15 cargo afl build --release --bin "$which" 2>&1 | grep -v "^ *Compiling" || true
fi

out="out/$which"
mkdir -p "$out"
# Resume an earlier run's queue when there is one.
input="corpus/$which"
[ -d "$out/default/queue" ] && input=-
# The chunk types as a dictionary: AFL cannot guess four-letter magic words byte by byte.
dict=()
case "$which" in ddm | heapmap) dict=(-x dict/ddm.dict) ;; esac
# No UI; tolerate a core_pattern or CPU governor this container cannot change; stop after
# SECONDS; a generous per-input timeout (ms) for the PNG encoder's large maps.
AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1 \
    nice -n 15 cargo afl fuzz -V "$secs" -t 2000 "${dict[@]}" -i "$input" -o "$out" "target/release/$which" \
    > "$out/afl.log" 2>&1 || { tail -20 "$out/afl.log"; exit 1; }

stats="$out/default/fuzzer_stats"
get() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
echo "$which: $(get execs_done) executions in $(get run_time) s ($(get execs_per_sec)/s)," \
     "$(get corpus_count) inputs in the queue, $(get saved_crashes) crashes, $(get saved_hangs) hangs"
ls "$out/default/crashes" 2>/dev/null | grep -v README || true
