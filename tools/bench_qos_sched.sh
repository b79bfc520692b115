#!/usr/bin/env bash
# twinlane next to DPDK's own hierarchical scheduler pipeline, the `qos_sched` example (RX lcore
# -> ring -> worker lcore running rte_sched enqueue/dequeue and TX), on the same virtual devices,
# the same frames and the same two-lcore layout, with dpdk-testpmd io forwarding (one lcore) as
# a ceiling reference. Prints Mpps of all three (medians), twinlane/qos_sched, and twinlane's
# cycles per packet per stage (from its --json report).
#
#   tools/bench_qos_sched.sh [TWINLANE|BUILD_DIR] [--benchmark_min_time=...]
#   RUNS=5 SECONDS_PER_RUN=5 tools/bench_qos_sched.sh    (defaults 3 and 5)
#   INPUTS="null mix" SIZES="64 1500"                     (defaults: all four cases)
#   QOS_SCHED_BSZ="64,64,32,64"  qos_sched's --bsz (RX read, ring/enqueue, dequeue, TX write)
#   QOS_SCHED_DIR=DIR            where qos_sched is built and cached (default BUILD_DIR/qos_sched)
#   QOS_SCHED_SRC=DIR            its sources (default /usr/share/dpdk/examples/qos_sched)
#   QOS_SCHED_EAL_ARGS="..."     more EAL options for qos_sched (e.g. --mbuf-pool-ops-name=stack,
#                                the LIFO mbuf store twinlane's pools use)
#   TWINLANE_RUN_ARGS="..."      more `twinlane run` options (e.g. --lane-ring-slots 8192)
#   HUGE_DIR=/dev/hugepages      every program on hugepages from that hugetlbfs mount (default --no-huge)
# A --benchmark_min_time argument (tools/test.sh passes one to every benchmark) makes it a brief
# run: one run of 1 s per program and case, no warm-up beyond qos_sched's first second, no
# testpmd column (tools/bench_dataplane.sh's brief run prints it). Exit 77 (meson: SKIP) with the
# reason when qos_sched cannot be built (dpdk-doc missing, no libdpdk, compile error).
#
# qos_sched is built here from Debian's dpdk-doc (/usr/share/dpdk/examples/qos_sched, installed
# by tools/setup.sh) with its own Makefile against the installed DPDK (pkg-config libdpdk), in
# QOS_SCHED_DIR, outside the source tree; its sources are copied there with their timestamps,
# so its Makefile rebuilds only when the package (or libdpdk.pc) changed. Nothing of it is in
# this repository.
#
# Inputs, the same frames for all programs:
#   null  net_null (zero-filled frames: not IP for twinlane, one flow in `other`; for qos_sched
#         subport 0, pipe 0, queue 0, one queue)
#   mix   net_pcap with infinite_rx=1 replaying a generated pcap on both ports: QinQ-tagged
#         (outer 802.1ad, inner 802.1Q) IPv4 TCP/UDP, 1024 flows x 4 packets shuffled; 1/4 TCP
#         to the serving port 50051 (inference), 1/4 RoCEv2 UDP 4791 (training), 1/2 other. The
#         PMD copies every frame on RX for every program.
# qos_sched classifies by fixed offsets (app_thread.c get_pkt_sched): outer VLAN id -> subport
# (masked by the subport count, 1 here), inner VLAN id -> pipe (masked by the 1024 enabled
# pipes), the last byte of the destination address -> queue (modulo its 16 active queues:
# TC 0-11 one queue each, TC 12 best effort four), the first byte & 3 -> colour. Flow f has
# inner VLAN 1024 + f, so pipe f: one flow per pipe, as twinlane's fq leaves keep a queue per
# flow. Inference goes to queue 0 (TC 0, strict priority), training to queue 12 and other to
# queue 13 (best effort, WRR 3:1), like twinlane's tree below (strict: inference first, then
# DRR training 3 : other 1). Destinations are 192.168.x.q: colour green (no RED/PIE configured
# anyway). twinlane classifies the same frames by its heuristics (RoCEv2, serving port 50051),
# parsing both tags; the script checks the class shares in its report.
#
# Scheduling, not shaping: all ports run at 100 Gbit/s. qos_sched takes its rte_sched port rate
# from the TX port's link speed, and net_null and net_pcap report 10G, so it runs with a
# preloaded library that reports the link of every port as 100G (rte_eth_link_get; nothing else
# is changed). Its profile (written below) gives the subport, every pipe and every traffic class
# the whole port rate, so no token bucket limits anything (rte_sched's credits accrue with its
# port time, which advances with every byte sent). twinlane's ports are 100G with a 1 MiB TX
# budget, as in tools/bench_dataplane.sh.
#
# Layout: lcore 0 = RX + classify of both ports, lcore 1 = scheduler + TX of both egress ports.
# qos_sched: --pfc "0,1,0,1" --pfc "1,0,0,1" (rx port, tx port, rx lcore, worker lcore; the
# worker also transmits); its main lcore must be a third one, which sleeps and prints stats
# each second: lcore 2 on CPU 0 (`--lcores 0@0,1@1,2@0`). twinlane: `lcores: {rx: [lcore 0 polls
# both ports], scheduler: [lcore 1 schedules both]}` with -l 0-1. Mbufs: 16384 for each program
# (qos_sched --msz 16384: both ports' RX queues are set up from the first pfc's pool; twinlane
# 2 x 8191, its default per port; testpmd --total-num-mbufs=16384). Runs alternate qos_sched and
# twinlane RUNS times; the medians are printed, with every run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
twinlane=${1:-$root/build/dataplane/twinlane}
[ -d "$twinlane" ] && twinlane=$twinlane/dataplane/twinlane  # a build directory (tools/bench.sh)
twinlane=$(realpath "$twinlane")
seconds=${SECONDS_PER_RUN:-5}
runs=${RUNS:-3}
warmup_rounds=1  # qos_sched stats rounds (1 s each) dropped after the first, see qos_sched_mpps
brief=0
for arg in "$@"; do
    case $arg in --benchmark_min_time=*) brief=1 seconds=1 runs=1 warmup_rounds=0 ;; esac
done
bsz=${QOS_SCHED_BSZ:-64,64,32,64}
qdir=${QOS_SCHED_DIR:-$(dirname "$(dirname "$twinlane")")/qos_sched}
src=${QOS_SCHED_SRC:-/usr/share/dpdk/examples/qos_sched}

skip() { echo "SKIP: $*"; exit 77; }
[ -x "$twinlane" ] || { echo "twinlane not found: $twinlane" >&2; exit 1; }

work=$(mktemp -d /tmp/twinlane-qos.XXXXXX)
prefix=tlqos$$  # EAL file prefix: each program's runtime directory, removed at exit
trap 'rm -rf "$work" /var/run/dpdk/"$prefix"-*' EXIT

# ---- qos_sched, built from the installed package -------------------------------------------
[ -f "$src/Makefile" ] ||
    skip "qos_sched example not installed ($src; tools/setup.sh installs dpdk-doc)"
pkg-config --exists libdpdk || skip "no libdpdk (pkg-config libdpdk); tools/setup.sh installs it"
mkdir -p "$qdir/src"
# The library that reports 100G links (see the header).
cat >"$work/link100g.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <rte_ethdev.h>
/* Every link that is up reports 100 Gbit/s: net_null and net_pcap report 10G. */
int rte_eth_link_get(uint16_t port_id, struct rte_eth_link *link)
{
	static int (*real)(uint16_t, struct rte_eth_link *);
	if (real == NULL)
		real = (int (*)(uint16_t, struct rte_eth_link *))dlsym(RTLD_NEXT, "rte_eth_link_get");
	int rc = real(port_id, link);
	if (rc == 0 && link->link_status == RTE_ETH_LINK_UP)
		link->link_speed = RTE_ETH_SPEED_NUM_100G;
	return rc;
}
C
(
    flock 9  # another run building into the same directory
    cp -p "$src"/*.c "$src"/*.h "$src/Makefile" "$qdir/src/"
    make -C "$qdir/src" >"$qdir/build.log" 2>&1 || exit 1
    cmp -s "$work/link100g.c" "$qdir/link100g.c" || cp "$work/link100g.c" "$qdir/link100g.c"
    if [ ! "$qdir/link100g.so" -nt "$qdir/link100g.c" ]; then
        # shellcheck disable=SC2046
        cc -O2 -shared -fPIC $(pkg-config --cflags libdpdk) "$qdir/link100g.c" \
            -o "$qdir/link100g.so" -ldl >>"$qdir/build.log" 2>&1 || exit 1
    fi
) 9>"$qdir/lock" || skip "cannot build qos_sched from $src: $(tail -3 "$qdir/build.log")"
qos_sched=$qdir/src/build/qos_sched
[ -x "$qos_sched" ] || skip "no qos_sched binary after the build: $qos_sched"
if [ "$brief" = 0 ]; then
    command -v dpdk-testpmd >/dev/null || skip "dpdk-testpmd not installed"
fi

# ---- inputs ----------------------------------------------------------------------------------
devices() {  # devices INPUT SIZE -> "DEV0 DEV1"
    case $1 in
    null) echo "net_null0,size=$2 net_null1,size=$2" ;;
    mix) echo "net_pcap0,rx_pcap=$work/qinq$2.pcap,infinite_rx=1 net_pcap1,rx_pcap=$work/qinq$2.pcap,infinite_rx=1" ;;
    esac
}

make_mix() {  # make_mix SIZE: the QinQ mix of SIZE-byte frames (see the header)
    python3 - "$1" "$work/qinq$1.pcap" <<'PY'
import random, struct, sys
size, out = int(sys.argv[1]), sys.argv[2]
rnd = random.Random(7)
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s & 0xFFFF) + (s >> 16)
    return ~((s & 0xFFFF) + (s >> 16)) & 0xFFFF
OUTER_VLAN = 256  # qos_sched subport 256 & (1 - 1) = 0
frames = []
for f in range(1024):
    kind = f % 8  # 0-1 inference, 2-3 RoCEv2 (training), 4-7 other
    proto = 6 if kind in (0, 1, 4, 5) else 17
    sport = 1024 + rnd.randrange(60000)
    dport = 50051 if kind < 2 else 4791 if kind < 4 else 1024 + rnd.randrange(40000)
    while kind >= 4 and dport in (4789, 4791):  # neither RoCEv2 nor VXLAN by accident
        dport = 1024 + rnd.randrange(40000)
    queue = 0 if kind < 2 else 12 if kind < 4 else 13  # qos_sched: TC 0, TC 12 queue 0 or 1
    src = bytes([10, 1, f >> 8, f & 255])
    dst = bytes([192, 168, rnd.randrange(256), queue])
    if proto == 6:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x10, 65535, 0, 0)
    else:
        l4 = struct.pack("!HHHH", sport, dport, size - 42, 0)
        if dport == 4791:  # BTH: opcode, flags, pkey, dest QP, PSN
            l4 += bytes([4, 0, 0xFF, 0xFF]) + struct.pack("!II", f & 0xFFFFFF, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, size - 22, 0, 0x4000, 64, proto, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    eth = bytes([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1])
    tags = struct.pack("!HHHHH", 0x88A8, OUTER_VLAN, 0x8100, 1024 + f, 0x0800)  # pipe f
    frame = eth + tags + ip + l4
    frames += [frame + bytes(size - len(frame))] * 4
rnd.shuffle(frames)
with open(out, "wb") as o:
    o.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, frame in enumerate(frames):
        o.write(struct.pack("<IIII", 0, i, len(frame), len(frame)) + frame)
PY
}

eal_common=(--no-huge --no-pci --no-shconf -m 512 --log-level=error)
# HUGE_DIR=/dev/hugepages (a hugetlbfs mount with 256+ free 2 MiB pages): all programs on
# hugepages, the production setup, instead of --no-huge (unlinked after init: nothing is left
# in the mount).
[ -n "${HUGE_DIR:-}" ] && eal_common=(--huge-dir "$HUGE_DIR" --huge-unlink "${eal_common[@]:1}")

# ---- qos_sched -------------------------------------------------------------------------------
# The profile: one subport, 1024 pipes of one profile, 64 packets per queue (the example's
# size); subport, pipes and all 13 traffic classes at the port rate (100G = 12.5e9 bytes/s).
write_profile() {
    local rate=12500000000 tc
    {
        printf '[port]\nframe overhead = 24\nnumber of subports per port = 1\n\n'
        printf '[subport 0]\nnumber of pipes per subport = 1024\n'
        printf 'queue sizes = 64 64 64 64 64 64 64 64 64 64 64 64 64\npipe 0-1023 = 0\n\n'
        printf '[subport profile 0]\ntb rate = %s\ntb size = 1000000\n' $rate
        for tc in $(seq 0 12); do printf 'tc %s rate = %s\n' "$tc" $rate; done
        printf 'tc period = 10\n\n'
        printf '[pipe profile 0]\ntb rate = %s\ntb size = 1000000\n' $rate
        for tc in $(seq 0 12); do printf 'tc %s rate = %s\n' "$tc" $rate; done
        printf 'tc period = 40\ntc 12 oversubscription weight = 1\ntc 12 wrr weights = 3 1 1 1\n'
    } >"$work/profile.cfg"
}

# qos_sched's measured rate. It runs until killed and prints, once a second from its main lcore
# (main.c: sleep(1); app_stat()), per pfc "TX port N: tx: M", M = the TX port's opackets
# (rte_eth_stats_get) since the previous print. Each line is timestamped as it arrives
# (stdbuf -oL: line-buffered). A round = one TX line per pfc; the first round (lcore launch,
# rings and queues filling) and warmup_rounds more are dropped; the rate is the TX packets of
# the next SECONDS rounds over the time between the round before them and the last of them, so
# start-up is excluded and the window is measured, not assumed to be 1 s per print.
qos_sched_mpps() {  # qos_sched_mpps INPUT SIZE -> Mpps
    local dev
    read -r -a dev <<<"$(devices "$1" "$2")"
    python3 - "$((warmup_rounds + 1))" "$seconds" "$((seconds + warmup_rounds + 40))" \
        "$work/qos_sched.txt" \
        env LD_PRELOAD="$qdir/link100g.so" stdbuf -oL "$qos_sched" "${eal_common[@]}" \
        ${QOS_SCHED_EAL_ARGS:-} --file-prefix "$prefix-q" --lcores 0@0,1@1,2@0 --main-lcore 2 \
        --vdev="${dev[0]}" --vdev="${dev[1]}" -- \
        --pfc "0,1,0,1" --pfc "1,0,0,1" --mnc 2 --msz 16384 --bsz "$bsz" \
        --cfg "$work/profile.cfg" <<'PY'
import re, subprocess, sys, threading, time
skip, seconds, limit, log = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
cmd, n_pfc = sys.argv[5:], 2
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
timer = threading.Timer(limit, p.kill)
timer.start()
rounds, current, lines = [], [], []  # rounds: (arrival time, TX packets of all pfcs)
for line in p.stdout:
    lines.append(line)
    m = re.match(r"TX port \d+: tx: (\d+)", line)
    if m:
        current.append(int(m.group(1)))
        if len(current) == n_pfc:
            rounds.append((time.monotonic(), sum(current)))
            current = []
            if len(rounds) == skip + seconds:
                break
p.terminate()
try:
    p.wait(5)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
timer.cancel()
open(log, "w").writelines(lines)
if len(rounds) < skip + seconds:
    sys.stderr.write("".join(lines[-30:]) + "qos_sched: too few stats rounds\n")
    sys.exit(1)
window = rounds[skip - 1:]  # from the end of the last dropped round to the last measured one
packets = sum(n for _, n in window[1:])
print(f"{packets / (window[-1][0] - window[0][0]) / 1e6:.3f}")
PY
}

# ---- twinlane --------------------------------------------------------------------------------
# The policy of tools/bench_dataplane.sh (strict root, fq/drr/fifo leaves, serving-port and RoCE
# heuristics, 100G ports, 1 MiB TX budget) in the two-lcore layout.
twinlane_policy() {  # twinlane_policy INPUT SIZE
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
lcores:
  rx:
    - {lcore: 0, poll: [{port: west, queues: [0]}, {port: east, queues: [0]}]}
  scheduler:
    - {lcore: 1, ports: [west, east]}
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

# twinlane's rate is its own report's: TX packets over the serving time (lcore launch to stop,
# after EAL init, port start and the pcap load), as tools/bench_dataplane.sh reads it. That
# window includes the first milliseconds while the rings fill, which qos_sched's excludes: if
# anything, this favours qos_sched.
twinlane_run() {  # twinlane_run INPUT SIZE RUN: writes $work/twinlane.RUN.json
    twinlane_policy "$1" "$2"
    # shellcheck disable=SC2086  # TWINLANE_RUN_ARGS: options split at spaces
    timeout $((seconds + 30)) "$twinlane" --log-level warn run --json --duration "$seconds" \
        --no-control ${TWINLANE_RUN_ARGS:-} -c "$work/policy.yaml" -- "${eal_common[@]}" \
        --file-prefix "$prefix-t" -l 0-1 >"$work/twinlane.$3.json"
}

# ---- testpmd (ceiling reference, one forwarding lcore, as tools/bench_dataplane.sh) ----------
testpmd_mpps() {  # testpmd_mpps INPUT SIZE
    local dev pps
    read -r -a dev <<<"$(devices "$1" "$2")"
    # Its own Tx-pps over the window between two `show port stats all`, the first once
    # start-up is over.
    (sleep 3; echo "show port stats all"; sleep "$seconds"; echo "show port stats all"
     echo stop; echo quit) |
        timeout $((seconds + 25)) dpdk-testpmd "${eal_common[@]}" --file-prefix "$prefix-p" \
            -l 0-1 --vdev="${dev[0]}" --vdev="${dev[1]}" -- \
            -i --forward-mode=io --nb-cores=1 --auto-start --total-num-mbufs=16384 \
            >"$work/testpmd.txt" 2>&1
    pps=$(grep -o "Tx-pps: *[0-9]*" "$work/testpmd.txt" | grep -o "[0-9]*$" | tail -2)
    [ "$(wc -w <<<"$pps")" = 2 ] || { cat "$work/testpmd.txt" >&2; echo "testpmd output not understood" >&2; exit 1; }
    # shellcheck disable=SC2086  # one argument per port
    python3 -c "import sys; print(f'{sum(map(int, sys.argv[1:])) / 1e6:.3f}')" $pps
}

# ---- the comparison --------------------------------------------------------------------------
write_profile
echo "qos_sched: $qos_sched (built from $src), --bsz $bsz; $runs run(s) of ${seconds} s each, alternated"
printf "%-14s %9s %10s %10s %8s   %-28s %s\n" "input, frame" "testpmd" "qos_sched" "twinlane" \
    "ratio" "twinlane cycles/packet" "runs (Mpps): qos_sched | twinlane"
printf "%-14s %9s %10s %10s %8s   %-28s\n" "" "Mpps" "Mpps" "Mpps" "tl/qos" \
    "rx+cls, enq, deq+tx"
for input in ${INPUTS:-null mix}; do
for size in ${SIZES:-64 1500}; do
    [ "$input" = mix ] && make_mix "$size"
    tp=-
    [ "$brief" = 0 ] && tp=$(testpmd_mpps "$input" "$size")
    qs=()
    for r in $(seq "$runs"); do
        q=$(qos_sched_mpps "$input" "$size")
        qs+=("$q")
        twinlane_run "$input" "$size" "$r"
    done
    python3 - "$input" "$size" "$tp" "${qs[*]}" "$work"/twinlane.*.json <<'PY'
import json, statistics, sys
inp, size, tp, qs = sys.argv[1], sys.argv[2], sys.argv[3], [float(x) for x in sys.argv[4].split()]
tl, cyc = [], {"rx_classify": [], "sched_enqueue": [], "sched_dequeue_tx": []}
for path in sys.argv[5:]:
    c = json.load(open(path))
    dropped = sum(c["dropped"].values())
    assert c["rx_packets"] == c["tx_packets"] + dropped + c["queued"], "counters do not balance"
    if inp == "mix":  # the QinQ frames are classified: 1/4 inference, 1/4 training, 1/2 other
        rx = {k["name"]: k["rx_packets"] / c["rx_packets"] for k in c["classes"]}
        for name, share in (("inference", .25), ("training", .25), ("other", .5)):
            assert abs(rx[name] - share) < .02, f"class shares {rx}"
    # A leaf fills only while its port's link (or NIC) holds packets back: the scheduler lcore
    # sends each pass at least what it admitted, and what the lcores cannot carry is refused
    # at the lane rings (counted as lane_ring_full) rather than dropped in the tree. At 1500 B
    # a fast machine reaches the ports' 100G, some of the time: tx_link_bound_ns says when.
    in_tree = {k: v for k, v in c["dropped"].items() if k.startswith("sched_") and v}
    held_back = [p["name"] for p in c["ports"] if p["tx_link_bound_ns"] > 0 or p["tx_refused"] > 0]
    wire_gbps = [round((p["tx_bytes"] + 20 * p["tx_packets"]) * 8 / c["elapsed_s"] / 1e9, 1)
                 for p in c["ports"]]
    assert not in_tree or held_back, (
        f"dropped in the scheduler at {wire_gbps} Gbit/s with no port held back by its link "
        f"or NIC: {in_tree}")
    tl.append(c["tx_packets"] / c["elapsed_s"] / 1e6)
    for k in cyc:
        cyc[k].append(c["cycles_per_packet"][k])
q, t = statistics.median(qs), statistics.median(tl)
tp = tp if tp == "-" else f"{float(tp):.2f}"
cycles = ", ".join(f"{statistics.median(v):.0f}" for v in cyc.values())
print(f"{inp + ', ' + size + ' B':<14} {tp:>9} {q:10.2f} {t:10.2f} {t / q:8.2f}   {cycles:<28} "
      + " ".join(f"{x:.2f}" for x in qs) + " | " + " ".join(f"{x:.2f}" for x in tl))
PY
    rm -f "$work"/twinlane.*.json
done
done
