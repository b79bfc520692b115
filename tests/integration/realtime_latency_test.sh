#!/usr/bin/env bash
# The brief run of tools/bench_realtime_latency.sh (a 50 ms trace, one run per case): training
# at 110% of a 10G egress, inference 5%, twinlane's default tree against one FIFO, run to
# completion and across two lcores. Checks what holds on a loaded 2-core machine too:
#   - every run balances: rx = tx + dropped + queued, and inference packets were sent;
#   - run to completion, when the FIFO queued (its p99 at least 20x its loop passes' p99: a
#     machine that reads the trace below 10G builds no queue, and then says so instead),
#     inference p99 behind the strict lane is at least 5x below the FIFO's
#     (measured 170-540x with RX bursts sized to burst_time: 55-70 us against the FIFO's
#     12-30 ms of queued link time; a preempted lcore delays only the burst in hand, so load
#     does not close the gap).
# Not asserted: the absolute goal (p99 <= 17.2 us, one 9018 B frame at 10G + 10 us, printed by
# the benchmark) and the two-lcore ratio. With two busy lcores on a 2-core machine shared with
# builds the scheduler lcore loses time slices while the RX lcore keeps stamping arrivals, and
# its inference p99 went from 0.1-0.2 ms (idle) to 15-20 ms (load 5), the FIFO's own level.
# Then the same brief run with the input paced at 25G from a preloaded capture (PACE=25G
# PRELOAD=1), which the benchmark also replays in virtual time (the same arrivals through the
# same tree): every run balances, and run to completion the FIFO's realtime p99 is within 2x of
# its virtual-time p99 (the pipeline reproduces the scheduler's queueing, measured 1.0x) and
# inference's at least 5x below the FIFO's. The pipeline's own addition at p99 (realtime less
# virtual time, measured 5-10 us on an idle VM) is printed, not asserted: it is within the CPU
# stalls of a shared machine (tools/cpu_stalls.py: 11-31 us at p99 here).
# Last, the paced run with training on an RX port of its own (SPLIT=1), checked the same way
# (its virtual-time reference replays the two captures, each on an ingress link of its own).
# Usage: realtime_latency_test.sh TWINLANE BENCH_SCRIPT
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
bench=$(realpath "$2")

# balanced_runs SUMMARY: every run of the benchmark's summary balances and sent inference.
balanced_runs() {
    python3 - "$1" <<'PY' || fail "accounting of the runs in $(basename "$1")"
import json, sys
for case in json.load(open(sys.argv[1]))["cases"]:
    for r in case["runs"]:
        assert r["balanced"], (case["layout"], case["policy"], r)
        assert r["packets"] > 100, (case["layout"], case["policy"], r)
PY
}
SUMMARY="$WORK/summary.json" "$bench" "$twinlane" --benchmark_min_time=0.01 ||
    fail "the benchmark exited non-zero"
balanced_runs "$WORK/summary.json"
python3 - "$WORK/summary.json" <<'PY' || fail "latency or accounting out of bounds"
import json, sys
s = json.load(open(sys.argv[1]))
ratios = ", ".join(f"{k} {v:.0f}x" for k, v in s["ratio_p99"].items())
fifo = next(c for c in s["cases"] if c["layout"] == "single" and c["policy"] == "fifo")["runs"][0]
# The comparison needs a queue: the FIFO's p99 far above its own loop passes. A machine that
# reads the trace below the port's rate (sanitizers, other tenants: 5.3 Gbit/s seen) builds
# none, and then there is nothing to isolate inference from.
if fifo["p99"] < 20 * max(l["p99"] for l in fifo["loops"].values()):
    print(f"PASS: balanced; the ratio not checked: the input ({fifo['input_gbps']:.1f} Gbit/s) "
          f"did not queue the 10G egress (FIFO p99 {fifo['p99']:.1f} us); {ratios}")
    sys.exit(0)
ratio = s["ratio_p99"]["single"]
assert ratio >= 5, f"run to completion: FIFO p99 only {ratio:.1f}x twinlane's"
print(f"PASS: balanced; FIFO/twinlane inference p99 {ratios}")
PY

SUMMARY="$WORK/paced.json" PACE=25G PRELOAD=1 "$bench" "$twinlane" --benchmark_min_time=0.01 ||
    fail "the paced benchmark exited non-zero"
balanced_runs "$WORK/paced.json"
python3 - "$WORK/paced.json" <<'PY' || fail "paced: latency or accounting out of bounds"
import json, sys
s = json.load(open(sys.argv[1]))
single = {c["policy"]: c["median"] for c in s["cases"] if c["layout"] == "single"}
virtual = s["virtual"]
fifo_ratio = single["fifo"]["p99"] / virtual["fifo"]["p99"]
assert 0.5 <= fifo_ratio <= 2, f"FIFO p99 realtime {single['fifo']['p99']:.0f} us against " \
    f"virtual time {virtual['fifo']['p99']:.0f} us"
ratio = s["ratio_p99"]["single"]
assert ratio >= 5, f"paced, run to completion: FIFO p99 only {ratio:.1f}x twinlane's"
own = single["twinlane"]["p99"] - virtual["twinlane"]["p99"]
print(f"PASS: paced and preloaded: balanced; FIFO p99 realtime/virtual time {fifo_ratio:.2f}; "
      f"FIFO/twinlane inference p99 {ratio:.0f}x; inference p99 {single['twinlane']['p99']:.1f} "
      f"us, virtual time {virtual['twinlane']['p99']:.1f} us (pipeline and machine {own:+.1f} us)")
PY

# And with training on an RX port of its own (SPLIT=1: the edge link's inference and other on
# another, both preloaded on one clock): every run balances, the FIFO's realtime p99 within 2x
# of its virtual time, inference at least 5x below the FIFO run to completion (measured 139x on
# an idle VM, p99 24.6 us).
SUMMARY="$WORK/split.json" PACE=25G PRELOAD=1 SPLIT=1 "$bench" "$twinlane" \
    --benchmark_min_time=0.01 || fail "the split-input benchmark exited non-zero"
balanced_runs "$WORK/split.json"
python3 - "$WORK/split.json" <<'PY' || fail "split inputs: latency out of bounds"
import json, sys
s = json.load(open(sys.argv[1]))
single = {c["policy"]: c["median"] for c in s["cases"] if c["layout"] == "single"}
virtual = s["virtual"]
fifo_ratio = single["fifo"]["p99"] / virtual["fifo"]["p99"]
assert 0.5 <= fifo_ratio <= 2, f"split inputs: FIFO p99 realtime {single['fifo']['p99']:.0f} " \
    f"us against virtual time {virtual['fifo']['p99']:.0f} us"
ratio = s["ratio_p99"]["single"]
assert ratio >= 5, f"split inputs, run to completion: FIFO p99 only {ratio:.1f}x twinlane's"
print(f"PASS: training on its own RX port: balanced; FIFO p99 realtime/virtual time "
      f"{fifo_ratio:.2f}; FIFO/twinlane inference p99 {ratio:.0f}x; inference p99 "
      f"{single['twinlane']['p99']:.1f} us, virtual time {virtual['twinlane']['p99']:.1f} us, "
      f"with no training {single['alone']['p99']:.1f} us")
PY
