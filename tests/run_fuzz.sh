#!/usr/bin/env bash
# Runs the libFuzzer harnesses for a bounded time each; exits non-zero on any finding.
#   tests/run_fuzz.sh BUILD_DIR SECONDS [HARNESS...]
# HARNESS: classify (tests/classifier/fuzz_classify.cc: parse + classify a frame), policy
# (tests/conf/fuzz_policy.cc: load, compile and write back a policy file), control
# (tests/control/fuzz_control.cc: control protocol lines dispatched to a running policy), replay
# (tests/replay/fuzz_replay.cc: any bytes as a capture, replayed through classifier and
# scheduler, every packet accounted for); all four by default. Configures BUILD_DIR (once) as a clang build with -Dfuzz=true, builds only
# the harnesses, seeds each from scratch copies (the checked-in corpora stay read-only), and
# fuzzes each for SECONDS. Crash inputs land in BUILD_DIR/fuzz-artifacts/.
set -euo pipefail

if [ "$#" -lt 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS [classify|policy|control|replay...]" >&2
  exit 2
fi
build_dir=$1
seconds=$2
shift 2
harnesses=("$@")
[ "${#harnesses[@]}" -gt 0 ] || harnesses=(classify policy control replay)
source_dir=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -f "$build_dir/build.ninja" ]; then
  CXX=clang++ CC=clang meson setup "$build_dir" "$source_dir" \
    -Dbuildtype=debugoptimized -Dfuzz=true -Dtests=true >/dev/null
fi

artifacts="$build_dir/fuzz-artifacts"
mkdir -p "$artifacts"
for harness in "${harnesses[@]}"; do
  work="$build_dir/fuzz-work-$harness"
  rm -rf "$work"
  mkdir -p "$work"
  extra=()
  case $harness in
    classify)
      target=tests/classifier/fuzz_classify
      ninja -C "$build_dir" -j2 $target tests/classifier/classifier_make_corpus >/dev/null
      cp "$source_dir"/tests/classifier/corpus/* "$work"/
      "$build_dir"/tests/classifier/classifier_make_corpus "$work"
      # A headers-only buffer is at most a few hundred bytes; longer inputs add time without
      # reaching new parser states.
      max_len=300
      ;;
    policy)
      target=tests/conf/fuzz_policy
      ninja -C "$build_dir" -j2 $target >/dev/null
      # Every policy the repository holds, examples and test policies.
      for f in "$source_dir"/conf/*.yaml "$source_dir"/tests/conf/data/*.yaml \
               "$source_dir"/tests/integration/*.yaml; do
        cp "$f" "$work/$(basename "$(dirname "$f")")_$(basename "$f")"
      done
      # The words of those policies as a dictionary, so mutations splice keys and values
      # rather than only bytes.
      grep -ohE '[A-Za-z_][A-Za-z0-9_.]*' "$work"/* | sort -u | sed 's/.*/"&"/' >"$work.dict"
      extra=(-dict="$work.dict")
      max_len=8192
      ;;
    control)
      target=tests/control/fuzz_control
      ninja -C "$build_dir" -j2 $target >/dev/null
      cp "$source_dir"/tests/control/fuzz_seeds/* "$work"/
      max_len=4096
      ;;
    replay)
      target=tests/replay/fuzz_replay
      ninja -C "$build_dir" -j2 $target >/dev/null
      python3 "$source_dir"/tests/replay/make_fuzz_seeds.py "$work"
      # A capture of a few dozen frames reaches every link type and record path; -timeout: a
      # capture whose timestamps make replay walk time instead of packets is a finding.
      extra=(-timeout=10)
      max_len=16384
      ;;
    *)
      echo "run_fuzz: unknown harness '$harness' (classify, policy, control, replay)" >&2
      exit 2
      ;;
  esac
  log="$artifacts/$harness.log"
  set +e
  "$build_dir/$target" "$work" -max_total_time="$seconds" -max_len=$max_len \
    -print_final_stats=1 -artifact_prefix="$artifacts/$harness-" "${extra[@]}" >"$log" 2>&1
  status=$?
  set -e
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$log"
    echo "run_fuzz: $harness: finding(s) in $artifacts (log $log)" >&2
    exit "$status"
  fi
  grep -E '^(Done|stat::(number_of_executed_units|new_units_added|peak_rss_mb))' "$log"
  echo "run_fuzz: $harness: ${seconds}s without findings"
done
