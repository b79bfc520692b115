#!/usr/bin/env bash
# Runs the classifier's libFuzzer harness for a bounded time; exits non-zero on any finding.
#   tests/classifier/run_fuzz.sh BUILD_DIR SECONDS
# Configures BUILD_DIR (once) as a clang build with -Dfuzz=true, builds only fuzz_classify and
# the corpus generator, regenerates the seed corpus into a scratch copy (the checked-in
# tests/classifier/corpus/ stays read-only), and fuzzes for SECONDS. Crash inputs land in
# BUILD_DIR/fuzz-artifacts/.
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build_dir=$1
seconds=$2
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
if [ ! -f "$build_dir/build.ninja" ]; then
  CXX=clang++ CC=clang meson setup "$build_dir" "$source_dir" \
    -Dbuildtype=debugoptimized -Dfuzz=true -Dtests=true >/dev/null
fi
ninja -C "$build_dir" -j2 tests/classifier/fuzz_classify tests/classifier/classifier_make_corpus >/dev/null

work="$build_dir/fuzz-work"
artifacts="$build_dir/fuzz-artifacts"
rm -rf "$work"
mkdir -p "$work" "$artifacts"
cp "$source_dir"/tests/classifier/corpus/* "$work"/
"$build_dir"/tests/classifier/classifier_make_corpus "$work"

# -max_len 300: a headers-only buffer is at most a few hundred bytes; longer inputs add time
# without reaching new parser states.
"$build_dir"/tests/classifier/fuzz_classify "$work" \
  -max_total_time="$seconds" -max_len=300 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" 2>&1 | tail -n 20
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "run_fuzz: finding(s) in $artifacts" >&2
  exit "$status"
fi
echo "run_fuzz: ${seconds}s without findings"
