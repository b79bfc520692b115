#!/usr/bin/env bash
# Runs every benchmark in full and prints their side-by-side tables:
#   sched_bench        twinlane's scheduler vs DPDK rte_sched (ns/packet, ratio)
#   classifier_bench   classification Mpps (flow-table hit path, rule miss path)
#   classifier_acl_bench  twinlane's rule table vs DPDK rte_acl
#   replay_bench       replay engine input packets/s (twinlane vs FIFO)
#   tools/bench_dataplane.sh (if present)  forwarding Mpps vs dpdk-testpmd
#   tools/bench_qos_sched.sh (if present)  forwarding Mpps vs DPDK's qos_sched (rte_sched's
#                                          pipeline), two lcores; skipped if it cannot be built
#   tools/bench_realtime_latency.sh        inference RX->TX latency at a saturated 10G egress,
#                                          twinlane's tree vs one FIFO, both layouts
# The machine may be shared and noisy: compare ratios within one run, not absolute times.
#   MIN_TIME=0.5 tools/bench.sh   seconds per benchmark case (default 0.3)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh >/dev/null
build=${BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release >/dev/null
ninja -C "$build" >/dev/null
meson test -C "$build" --benchmark --no-rebuild --verbose --logbase benchmarklog \
    --test-args="--benchmark_min_time=${MIN_TIME:-0.3} --benchmark_color=false" 2>&1 |
    grep -vE '^(ninja|\[)'
if [ -x tools/bench_dataplane.sh ]; then
    tools/bench_dataplane.sh "$build"
fi
if [ -x tools/bench_qos_sched.sh ]; then
    tools/bench_qos_sched.sh "$build" || [ $? = 77 ]  # 77: printed why it was skipped
fi
tools/bench_realtime_latency.sh "$build"
