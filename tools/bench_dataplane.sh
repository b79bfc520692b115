#!/usr/bin/env bash
# Forwarding throughput of the realtime pipeline next to `dpdk-testpmd --forward-mode=io` on the
# same virtual devices (net_null in a bump in the wire), in the same run, one forwarding lcore
# each, at 64 B and 1500 B. Prints Mpps of both, the ratio, and twinlane's cycles per packet
# per stage. Bounded: SECONDS_PER_RUN (default 5) per run, 4 runs.
#   tools/bench_dataplane.sh [TWINLANE] [--benchmark_min_time=...]
#   (default TWINLANE: build/dataplane/twinlane; a --benchmark_min_time argument, as
#   tools/test.sh passes to every benchmark for a brief run, shortens each run to 1 s)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
twinlane=${1:-$root/build/dataplane/twinlane}
seconds=${SECONDS_PER_RUN:-5}
for arg in "$@"; do
    case $arg in --benchmark_min_time=*) seconds=1 ;; esac
done
work=$(mktemp -d /tmp/twinlane-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
eal=(--no-huge --no-pci --no-shconf -m 512 --log-level=error)

command -v dpdk-testpmd >/dev/null || { echo "SKIP: dpdk-testpmd not installed"; exit 77; }

# Policy: classification and scheduling on (strict root, fq/drr/fifo leaves, serving-port and
# RoCE heuristics), ports at 100G so pacing does not cap a software run, one lcore.
policy() {  # policy SIZE
    cat >"$work/policy.yaml" <<YAML
version: 1
ports:
  - {name: west, device: "net_null0,size=$1", rate: 100G, tx_budget: 1MiB}
  - {name: east, device: "net_null1,size=$1", rate: 100G, tx_budget: 1MiB}
forwarding:
  - {from: west, to: east}
  - {from: east, to: west}
lcores: {single: 1}
classes: [inference, training, other]
scheduler:
  name: root
  kind: strict
  children:
    - {name: inference, kind: fq, class: inference}
    - name: bulk
      kind: drr
      children:
        - {name: training, kind: fq, class: training, weight: 3}
        - {name: other, kind: fifo, class: other, weight: 1}
classifier:
  heuristics:
    roce: training
    serving: {ports: [50051], class: inference}
    default_class: other
metrics: {enabled: false}
YAML
}

testpmd_mpps() {  # testpmd_mpps SIZE: io forwarding on lcore 1 (main lcore 0 reads commands)
    (sleep "$seconds"; echo stop; echo quit) |
        timeout $((seconds + 20)) dpdk-testpmd "${eal[@]}" -l 0-1 \
            --vdev="net_null0,size=$1" --vdev="net_null1,size=$1" -- \
            -i --forward-mode=io --nb-cores=1 --auto-start --total-num-mbufs=16384 \
            >"$work/testpmd.txt" 2>&1
    # The accumulated block after `stop`: "TX-packets: N ... TX-total" for all ports.
    local tx
    tx=$(grep -A2 "Accumulated forward statistics for all ports" "$work/testpmd.txt" |
         grep -o "TX-packets: *[0-9]*" | grep -o "[0-9]*$")
    [ -n "$tx" ] || { cat "$work/testpmd.txt" >&2; echo "testpmd output not understood" >&2; exit 1; }
    # Forwarding ran from auto-start to `stop`: about SECONDS_PER_RUN, startup excluded.
    python3 -c "print(f'{$tx / $seconds / 1e6:.3f}')"
}

# twinlane: the whole pipeline on lcore 1; the main lcore 0 waits (its monitor thread sleeps).
twinlane_run() {  # twinlane_run SIZE: writes the JSON report
    policy "$1"
    timeout $((seconds + 30)) "$twinlane" --log-level warn run --json --duration "$seconds" \
        -c "$work/policy.yaml" -- "${eal[@]}" -l 0-1 >"$work/twinlane.json"
}

printf "%-8s %14s %14s %8s   %s\n" "frame" "testpmd Mpps" "twinlane Mpps" "ratio" \
    "twinlane cycles/packet (rx+classify, sched enqueue, dequeue+tx)"
for size in 64 1500; do
    tp=$(testpmd_mpps "$size")
    twinlane_run "$size"
    python3 - "$work/twinlane.json" "$tp" "$size" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
tp = float(sys.argv[2])
tl = c["tx_packets"] / c["elapsed_s"] / 1e6
cyc = c["cycles_per_packet"]
dropped = sum(c["dropped"].values())
assert c["rx_packets"] == c["tx_packets"] + dropped + c["queued"], "counters do not balance"
print(f"{sys.argv[3] + ' B':<8} {tp:14.3f} {tl:14.3f} {tl / tp:8.3f}   "
      f"{cyc['rx_classify']:.0f}, {cyc['sched_enqueue']:.0f}, {cyc['sched_dequeue_tx']:.0f}"
      f"  (dropped {dropped})")
PY
done
