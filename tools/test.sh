#!/usr/bin/env bash
# README command 2: set up, build, and run every test. The last line is
# `tests: N passed, N failed` (GoogleTest cases plus script tests); non-zero exit on failure.
#   BUILD_DIR=build-x tools/test.sh      use another build directory
#   SANITIZE=1 tools/test.sh             also build with -Db_sanitize=address,undefined and test it,
#                                        and run the cross-thread tests under ThreadSanitizer
#   FUZZ_SECONDS=60 tools/test.sh        fuzz longer (default 20 s per harness)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

tools/setup.sh || exit 1
build=${BUILD_DIR:-build}

configure() {  # configure DIR BUILDTYPE [meson options...]
    local dir=$1 buildtype=$2
    shift 2
    if [ -f "$dir/build.ninja" ]; then
        meson configure "$dir" --buildtype="$buildtype" "$@" >/dev/null || return 1
    else
        meson setup "$dir" --buildtype="$buildtype" "$@" >/dev/null || return 1
    fi
}

run_suite() {  # run_suite DIR [meson test args]: prints meson's summary, logs in DIR/meson-logs
    local dir=$1
    shift
    ninja -C "$dir" || return 1
    meson test -C "$dir" --num-processes 2 --print-errorlogs --no-rebuild "$@" \
        >"$dir/meson-logs/test-output.txt" 2>&1
    # Failures' output is printed once, at the end, by count_tests.py (a CI log keeps its tail).
    grep -E '^ *[0-9]+/[0-9]+ ' "$dir/meson-logs/test-output.txt"
    return 0
}

configure "$build" release || { echo "tests: 0 passed, 1 failed"; exit 1; }
run_suite "$build" || { echo "build failed"; echo "tests: 0 passed, 1 failed"; exit 1; }
logs=("$build/meson-logs")

if [ "${SANITIZE:-0}" = 1 ]; then
    configure "$build-asan" debugoptimized -Db_sanitize=address,undefined -Db_lundef=false ||
        exit 1
    # The fuzzer already runs with its own sanitizers; the end-to-end and timing tests ran
    # once above (they measure time, which the sanitizers would skew); the package test builds
    # its own binaries, not this build's.
    run_suite "$build-asan" --no-suite fuzz --no-suite e2e --no-suite timing --no-suite package || { echo "tests: 0 passed, 1 failed"; exit 1; }
    logs+=("$build-asan/meson-logs")
    # ThreadSanitizer on the tests that read counters across threads (suite tsan): only their
    # binaries are built.
    configure "$build-tsan" debugoptimized -Db_sanitize=thread -Db_lundef=false || exit 1
    tsan_targets=$(meson introspect "$build-tsan" --tests |
        python3 -c 'import json,sys,os; print(" ".join(os.path.relpath(t["cmd"][0], sys.argv[1]) for t in json.load(sys.stdin) if "twinlane:tsan" in t["suite"]))' "$build-tsan")
    ninja -C "$build-tsan" $tsan_targets >/dev/null || { echo "tests: 0 passed, 1 failed"; exit 1; }
    meson test -C "$build-tsan" --suite tsan --no-rebuild --print-errorlogs \
        >"$build-tsan/meson-logs/test-output.txt" 2>&1
    grep -E '^ *[0-9]+/[0-9]+ ' "$build-tsan/meson-logs/test-output.txt"
    logs+=("$build-tsan/meson-logs")
fi

# Benchmarks run briefly so that their side-by-side tables show and they cannot rot.
if [ "${BENCH:-1}" = 1 ]; then
    echo "== benchmarks (brief; tools/bench.sh for full runs) =="
    # Own log base, so the benchmark log does not replace the tests' junit that is counted.
    meson test -C "$build" --benchmark --no-rebuild --verbose --logbase benchmarklog \
        --test-args="--benchmark_min_time=0.01 --benchmark_color=false" 2>&1 |
        grep -vE '^(ninja|\[)' | tail -150
fi

python3 tools/count_tests.py "${logs[@]}"
