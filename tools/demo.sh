#!/usr/bin/env bash
# README command 1: set up, build, and run twinlane's main job on a built-in default with no
# NIC: generate a mixed AI workload (training offered at 110% of a 10G link, inference 5%,
# other 2%), replay it in virtual time under twinlane, a FIFO and DPDK's rte_sched, print the
# comparison and draw the plots; then a lossless training lane under an incast (PFC), and an
# inference surge (25x for 20 ms) under conf/inference-slo.yaml with and without its SLO
# controller (README.md, "Latency SLOs").
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
build=${BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release >/dev/null
ninja -C "$build" dataplane/twinlane >/dev/null

out=${OUT_DIR:-out/demo}
policy=${POLICY:-conf/default.yaml}
mkdir -p "$out"
twinlane="$build/dataplane/twinlane"

echo "== 1. generate: 50 ms of mixed AI traffic at 10 Gbit/s -> $out/mix.pcap"
"$twinlane" gen -o "$out/mix.pcap" --link-rate 10G --duration 50ms \
    --training-load 1.1 --inference-load 0.05 --other-load 0.02 --seed 1 | tail -5

echo
echo "== 2. replay through $policy under twinlane, FIFO and rte_sched (virtual time)"
"$twinlane" --log-level warn replay -c "$policy" -i "$out/mix.pcap" --link-rate 10G \
    --compare fifo,rte_sched -o "$out/out.pcap" --report "$out/report.json"

echo
echo "== 3. plots"
# Debian's matplotlib is in /usr/bin/python3; another python3 may come first in PATH.
plot_python=python3
python3 -c 'import matplotlib' 2>/dev/null || plot_python=/usr/bin/python3
"$plot_python" tools/plot_report.py "$out"/report.twinlane.json "$out"/report.fifo.json \
    "$out"/report.rte_sched.json --out-dir "$out"
echo "reports: $out/report.{twinlane,fifo,rte_sched}.json  departures: $out/out.*.pcap"

echo
echo "== 4. lossless training (conf/lossless.yaml): an 8:1 RoCEv2 incast at 2x the 10G egress,"
echo "      its senders paused by PFC instead of dropped; the egress peer pauses priority 3 for"
echo "      2 ms at t = 10 ms (training held, inference flowing)"
lossless="$out/lossless"
mkdir -p "$lossless"
"$twinlane" gen -o "$lossless/incast.pcap" --link-rate 10G --duration 50ms --training-load 2.0 \
    --inference-load 0.05 --other-load 0 --jobs 8 --flows-per-job 2 --roce-only --seed 3 >/dev/null
"$twinlane" --log-level warn replay -c conf/lossless.yaml -i "$lossless/incast.pcap" --port east \
    --pfc-pause 10ms:3:2ms --report "$lossless/report.json"
"$plot_python" tools/plot_report.py "$lossless/report.json" --out-dir "$lossless"
echo "report: $lossless/report.json  plots: $lossless/*.png (pauses shaded)"

echo
echo "== 5. inference surging to 25x (10-30 ms of 100 ms) under conf/inference-slo.yaml,"
echo "      with its SLO controller and with the fixed cap (--slo-measure-only)"
python3 tools/slo_goals.py "$twinlane" conf/inference-slo.yaml "$out/surge"
"$plot_python" tools/plot_report.py "$out/surge/controller.json" "$out/surge/fixed.json" \
    --out-dir "$out/surge" | grep slo_windows
