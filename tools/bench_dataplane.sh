#!/usr/bin/env bash
# Forwarding throughput of the realtime pipeline next to `dpdk-testpmd --forward-mode=io` on the
# same virtual devices, in the same run, one forwarding lcore each, at 64 B and 1500 B, for two
# inputs:
#   null  net_null in a bump in the wire: zero-filled (non-IP) frames, one flow, no copy
#   mix   net_pcap with infinite_rx=1 replaying a generated pcap (both ports): IPv4 TCP/UDP,
#         1024 flows x 4 packets shuffled; 1/4 TCP to the serving port 50051 (inference), 1/4
#         RoCEv2 UDP 4791 (training), 1/2 other TCP/UDP. The PMD copies every frame on RX for
#         both programs, so absolute rates are lower than null's.
# Prints Mpps of both, the ratio, and twinlane's cycles per packet per stage.
# Bounded: SECONDS_PER_RUN (default 5) per run, 8 runs. INPUTS="null mix" (default) selects;
# HUGE_DIR runs both programs on hugepages (see below). BASELINE=/path/to/an/older/twinlane
# runs it and this one alternately, RUNS times each (default 3), and prints both medians and
# their ratio instead of testpmd's column (side by side in one run: the machine drifts).
#   tools/bench_dataplane.sh [TWINLANE|BUILD_DIR] [--benchmark_min_time=...]
#   (default TWINLANE: build/dataplane/twinlane; a --benchmark_min_time argument, as
#   tools/test.sh passes to every benchmark for a brief run, shortens each run to 1 s)
# tools/bench_qos_sched.sh runs the same pipeline in a two-lcore layout next to DPDK's qos_sched.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
twinlane=${1:-$root/build/dataplane/twinlane}
[ -d "$twinlane" ] && twinlane=$twinlane/dataplane/twinlane  # a build directory (tools/bench.sh)
seconds=${SECONDS_PER_RUN:-5}
for arg in "$@"; do
    case $arg in --benchmark_min_time=*) seconds=1 ;; esac
done
work=$(mktemp -d /tmp/twinlane-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
eal=(--no-huge --no-pci --no-shconf -m 512 --log-level=error)
# HUGE_DIR=/dev/hugepages (a hugetlbfs mount with 256+ free 2 MiB pages): both programs on
# hugepages, the production setup, instead of --no-huge.
[ -n "${HUGE_DIR:-}" ] && eal=(--huge-dir "$HUGE_DIR" "${eal[@]:1}")

command -v dpdk-testpmd >/dev/null || { echo "SKIP: dpdk-testpmd not installed"; exit 77; }

# The two ports' devices for an input and frame size.
devices() {  # devices INPUT SIZE -> "DEV0 DEV1"
    case $1 in
    null) echo "net_null0,size=$2 net_null1,size=$2" ;;
    mix) echo "net_pcap0,rx_pcap=$work/mix$2.pcap,infinite_rx=1 net_pcap1,rx_pcap=$work/mix$2.pcap,infinite_rx=1" ;;
    esac
}

# The `mix` input: SIZE-byte IPv4 frames with valid checksums (see the header).
make_mix() {  # make_mix SIZE
    python3 - "$1" "$work/mix$1.pcap" <<'PY'
import random, struct, sys
size, out = int(sys.argv[1]), sys.argv[2]
rnd = random.Random(7)
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s & 0xFFFF) + (s >> 16)
    return ~((s & 0xFFFF) + (s >> 16)) & 0xFFFF
frames = []
for f in range(1024):
    kind = f % 8  # 0-1 inference, 2-3 RoCEv2, 4-7 other
    proto = 6 if kind in (0, 1, 4, 5) else 17
    sport = 1024 + rnd.randrange(60000)
    dport = 50051 if kind < 2 else 4791 if kind < 4 else 1024 + rnd.randrange(40000)
    src, dst = bytes([10, 1, f >> 8, f & 255]), bytes([10, 2, rnd.randrange(256), rnd.randrange(1, 255)])
    if proto == 6:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x10, 65535, 0, 0)
    else:
        l4 = struct.pack("!HHHH", sport, dport, size - 34, 0)
        if dport == 4791:  # BTH: opcode, flags, pkey, dest QP, PSN
            l4 += bytes([4, 0, 0xFF, 0xFF]) + struct.pack("!II", f & 0xFFFFFF, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, size - 14, 0, 0x4000, 64, proto, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    frame = bytes([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0]) + ip + l4
    frames += [frame + bytes(size - len(frame))] * 4
rnd.shuffle(frames)
with open(out, "wb") as o:
    o.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, frame in enumerate(frames):
        o.write(struct.pack("<IIII", 0, i, len(frame), len(frame)) + frame)
PY
}

# Policy: classification and scheduling on (strict root, fq/drr/fifo leaves, serving-port and
# RoCE heuristics), ports at 100G so pacing does not cap a software run, one lcore.
policy() {  # policy INPUT SIZE
    local dev
    read -r -a dev <<<"$(devices "$1" "$2")"
    cat >"$work/policy.yaml" <<YAML
version: 1
ports:
  - {name: west, device: "${dev[0]}", rate: 100G, tx_budget: 1MiB}
  - {name: east, device: "${dev[1]}", rate: 100G, tx_budget: 1MiB}
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

testpmd_mpps() {  # testpmd_mpps INPUT SIZE: io forwarding on lcore 1 (lcore 0 reads commands)
    local dev
    read -r -a dev <<<"$(devices "$1" "$2")"
    # testpmd's own rate over the measured window: the second `show port stats all` prints
    # Tx-pps since the first (TSC-timed), which is sent once start-up (EAL, pcap load) is
    # surely over. Dividing the accumulated count by SECONDS_PER_RUN instead counted start-up
    # as idle time: mix 64 B read 19-20 Mpps where testpmd itself reported 26.
    (sleep 3; echo "show port stats all"; sleep "$seconds"; echo "show port stats all"
     echo stop; echo quit) |
        timeout $((seconds + 25)) dpdk-testpmd "${eal[@]}" -l 0-1 \
            --vdev="${dev[0]}" --vdev="${dev[1]}" -- \
            -i --forward-mode=io --nb-cores=1 --auto-start --total-num-mbufs=16384 \
            >"$work/testpmd.txt" 2>&1
    # The last two "Tx-pps: N" lines: ports 0 and 1 in the second show.
    local pps
    pps=$(grep -o "Tx-pps: *[0-9]*" "$work/testpmd.txt" | grep -o "[0-9]*$" | tail -2)
    [ "$(wc -w <<<"$pps")" = 2 ] || { cat "$work/testpmd.txt" >&2; echo "testpmd output not understood" >&2; exit 1; }
    python3 -c "import sys; print(f'{sum(map(int, sys.argv[1:])) / 1e6:.3f}')" $pps
}

# twinlane: the whole pipeline on lcore 1, which is also the main lcore (`-l 1`), so that, as
# with testpmd (whose main lcore sleeps reading commands), exactly one lcore runs. (A main lcore
# without a role now sleeps while the workers run; it used to busy-wait, which on a 2-vCPU VM
# halved the forwarding lcore's rate.) The monitor thread sleeps either way.
twinlane_run() {  # twinlane_run INPUT SIZE [BINARY]: writes the JSON report
    policy "$1" "$2"
    # --no-control: a daemon (or another bench) holding the policy's default control socket
    # must not make the run fail.
    timeout $((seconds + 30)) "${3:-$twinlane}" --log-level warn run --json --duration "$seconds" \
        --no-control -c "$work/policy.yaml" -- "${eal[@]}" -l 1 >"$work/twinlane.json"
}

twinlane_mpps() {  # twinlane_mpps INPUT SIZE BINARY
    twinlane_run "$1" "$2" "$3"
    python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["tx_packets"] / c["elapsed_s"] / 1e6)' \
        "$work/twinlane.json"
}

if [ -n "${BASELINE:-}" ]; then
    printf "%-14s %14s %14s %8s\n" "input, frame" "baseline Mpps" "twinlane Mpps" "ratio"
    for input in ${INPUTS:-null mix}; do
    for size in ${SIZES:-64 1500}; do
        [ "$input" = mix ] && make_mix "$size"
        base=() new=()
        for _ in $(seq "${RUNS:-3}"); do
            base+=("$(twinlane_mpps "$input" "$size" "$BASELINE")")
            new+=("$(twinlane_mpps "$input" "$size" "$twinlane")")
        done
        python3 - "$input, $size B" "${base[*]}" "${new[*]}" <<'PY'
import statistics, sys
base = [float(x) for x in sys.argv[2].split()]
new = [float(x) for x in sys.argv[3].split()]
b, n = statistics.median(base), statistics.median(new)
print(f"{sys.argv[1]:<14} {b:14.3f} {n:14.3f} {n / b:8.3f}   runs: {sys.argv[2]} | {sys.argv[3]}")
PY
    done
    done
    exit 0
fi

printf "%-14s %14s %14s %8s   %s\n" "input, frame" "testpmd Mpps" "twinlane Mpps" "ratio" \
    "twinlane cycles/packet (rx+classify, sched enqueue, dequeue+tx)"
for input in ${INPUTS:-null mix}; do
for size in ${SIZES:-64 1500}; do
    [ "$input" = mix ] && make_mix "$size"
    tp=$(testpmd_mpps "$input" "$size")
    twinlane_run "$input" "$size"
    python3 - "$work/twinlane.json" "$tp" "$input, $size B" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
tp = float(sys.argv[2])
tl = c["tx_packets"] / c["elapsed_s"] / 1e6
cyc = c["cycles_per_packet"]
dropped = sum(c["dropped"].values())
assert c["rx_packets"] == c["tx_packets"] + dropped + c["queued"], "counters do not balance"
print(f"{sys.argv[3]:<14} {tp:14.3f} {tl:14.3f} {tl / tp:8.3f}   "
      f"{cyc['rx_classify']:.0f}, {cyc['sched_enqueue']:.0f}, {cyc['sched_dequeue_tx']:.0f}"
      f"  (dropped {dropped})")
PY
done
done
