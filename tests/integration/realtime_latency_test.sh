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
# A case whose lcore lost its CPU for longer than the latency judged is run again (below).
# Usage: realtime_latency_test.sh TWINLANE BENCH_SCRIPT
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
bench=$(realpath "$2")

# A run to completion judged by a ratio of p99s can be undone by the machine: one time slice
# taken from the lcore (4 ms by a kernel thread, seen) delays every packet queued behind it,
# and with 1% of a 50 ms trace's inference that is the p99. judge.py exits 2 instead of 1 when
# the judged run's lcore lost its CPU for longer than the p99 being judged (for twinlane's,
# FIFO p99 / 5), by either sign: the longest its inputs went unpolled (the run report's
# poll_gap_max_ns, idle passes included: a pass moves a few bursts, p99 10-20 us, so a gap
# that long was a stall; the only sign of the hypervisor's or IRQs' share: a 152 us busy pass
# with 0 us waited was seen), or the time other threads took its CPU (runqueue_wait_ns, from
# /proc; since the loop started, so also outside the trace). Such a case is run again, at most
# 5 runs; a failure with neither sign fails at once (the latency was queueing, the
# scheduler's), and one that repeats in 5 runs of 5 fails too, so a slow scheduler cannot pass
# as a slow machine.
cat >"$WORK/judge.py" <<'PY'
import json, sys
mode, path = sys.argv[1], sys.argv[2]
s = json.load(open(path))
for case in s["cases"]:
    for r in case["runs"]:
        if not r["balanced"] or r["packets"] <= 100:
            print(f"accounting: {case['layout']} {case['policy']}: {r}")
            sys.exit(1)
single = {c["policy"]: c for c in s["cases"] if c["layout"] == "single"}
fifo, twin = single["fifo"]["runs"][0], single["twinlane"]["runs"][0]
ratios = ", ".join(f"{k} {v:.0f}x" for k, v in s["ratio_p99"].items())
ratio = s["ratio_p99"]["single"]


def check(ok, why, run, bound_us):
    """Exits unless ok: 2 when run's lcore lost its CPU for longer than bound_us (its inputs
    unpolled that long, or other threads' time on it), else 1."""
    if ok:
        return
    role, loop = max(run["loops"].items(), key=lambda item: item[1]["unpolled_max"])
    longest, waited_us = loop["unpolled_max"], loop.get("runqueue_wait_ms", 0) * 1e3
    taken = longest > bound_us or waited_us > bound_us
    print(f"{why} ({role}: inputs unpolled {longest:.0f} us at most against {bound_us:.0f} us "
          f"judged, busy passes p99 {loop['p99']:.0f} us, max {loop['max']:.0f}; other threads "
          f"took its CPU {waited_us:.0f} us in "
          f"{loop.get('preemptions', '?')} preemptions: "
          f"{'the CPU was taken' if taken else 'not a lost CPU'})")
    sys.exit(2 if taken else 1)


if mode == "unpaced":
    # The comparison needs a queue: the FIFO's p99 far above its own loop passes. A machine
    # that reads the trace below the port's rate (sanitizers, other tenants: 5.3 Gbit/s seen)
    # builds none, and then there is nothing to isolate inference from.
    if fifo["p99"] < 20 * max(l["p99"] for l in fifo["loops"].values()):
        print(f"PASS: balanced; the ratio not checked: the input ({fifo['input_gbps']:.1f} "
              f"Gbit/s) did not queue the 10G egress (FIFO p99 {fifo['p99']:.1f} us); {ratios}")
        sys.exit(0)
    check(ratio >= 5, f"run to completion: FIFO p99 only {ratio:.1f}x twinlane's", twin,
          fifo["p99"] / 5)
    print(f"PASS: balanced; FIFO/twinlane inference p99 {ratios}")
    sys.exit(0)
virtual = s["virtual"]
fifo_ratio = single["fifo"]["median"]["p99"] / virtual["fifo"]["p99"]
check(0.5 <= fifo_ratio <= 2, f"FIFO p99 realtime {single['fifo']['median']['p99']:.0f} us "
      f"against virtual time {virtual['fifo']['p99']:.0f} us", fifo, virtual["fifo"]["p99"])
check(ratio >= 5, f"run to completion: FIFO p99 only {ratio:.1f}x twinlane's", twin,
      fifo["p99"] / 5)
p99, vp99 = single["twinlane"]["median"]["p99"], virtual["twinlane"]["p99"]
what = "paced and preloaded" if mode == "paced" else "training on its own RX port"
extra = (f" (pipeline and machine {p99 - vp99:+.1f} us)" if mode == "paced" else
         f", with no training {single['alone']['median']['p99']:.1f} us")
print(f"PASS: {what}: balanced; FIFO p99 realtime/virtual time {fifo_ratio:.2f}; FIFO/twinlane "
      f"inference p99 {ratio:.0f}x; inference p99 {p99:.1f} us, virtual time {vp99:.1f} us{extra}")
PY

# brief MODE [ENV=VALUE...]: the benchmark's brief run with ENV, judged; repeated while the
# judge says the lcore's CPU was taken, at most 5 runs.
brief() {
    local mode=$1 attempt rc
    for attempt in 1 2 3 4 5; do
        env "${@:2}" SUMMARY="$WORK/$mode.json" "$bench" "$twinlane" --benchmark_min_time=0.01 ||
            fail "$mode: the benchmark exited non-zero"
        rc=0
        python3 "$WORK/judge.py" "$mode" "$WORK/$mode.json" || rc=$?
        [ "$rc" -eq 0 ] && return 0
        [ "$rc" -eq 2 ] || fail "$mode: latency or accounting out of bounds"
        echo "$mode: run $attempt judged on a taken CPU, not on the scheduler: run again"
    done
    fail "$mode: the lcore lost its CPU in 5 runs of 5: this machine cannot judge the ratio"
}

brief unpaced
brief paced PACE=25G PRELOAD=1
# And with training on an RX port of its own (SPLIT=1: the edge link's inference and other on
# another, both preloaded on one clock): every run balances, the FIFO's realtime p99 within 2x
# of its virtual time, inference at least 5x below the FIFO run to completion (measured 139x on
# an idle VM, p99 24.6 us).
brief split PACE=25G PRELOAD=1 SPLIT=1
