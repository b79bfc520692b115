#!/usr/bin/env bash
# End-to-end: twinlane as the gateway between two network namespaces, with real TCP bulk
# traffic (training) and a UDP request/response probe (inference), next to the Linux kernel as
# the gateway on the same veth path.
#
#   tl-client [veth-c 198.18.0.1] ── veth-gw0 [tl-gw] veth-gw1 ── [veth-s 198.18.0.2] tl-server
#
# tl-gw forwards in four set-ups, one after the other, each with the same load: iperf3 with 4
# parallel TCP streams client -> server (dst port 5201 = training) and sockperf UDP ping-pong on
# port 50051 (inference), 1000 requests/s, round-trip time from its percentiles.
#   twinlane        twinlane run on AF_XDP (its own XDP program), policy: inference strictly first
#   twinlane-fifo   the same ports, policy: one FIFO for everything
#   kernel-prio     Linux bridge, HTB at the same rate with a priority class for the probe
#                   (the best this kernel offers: no ets/fq_codel/cake/prio qdisc modules)
#   kernel-fifo     Linux bridge, HTB at the same rate, one pfifo
# Checks: twinlane's probe p99 RTT is far below twinlane-fifo's; goals (failures with E2E_STRICT=1,
# reported otherwise: they depend on the machine's idle CPUs): below the kernel's best; bulk
# throughput under twinlane is at least 90% of the port rate. Falls back to AF_PACKET ports
# (net_af_packet) where AF_XDP does not work, and says so; E2E_PORTS=af_packet forces that.
#
# usage: gateway_e2e.sh TWINLANE XDP_OBJECT XDP_CONFIG   (as root; TWINLANE_E2E=0 skips)
#   (meson: meson test -C build --suite e2e --print-errorlogs)
#   E2E_RATE_MBIT (default 300), E2E_SECONDS (bulk run per set-up, default 12),
#   E2E_ONLY="kernel-prio kernel-fifo" to run a subset (then fewer checks apply),
#   E2E_KEEP=1 keeps the logs, policies and reports in /tmp/twinlane-e2e.*.
#   E2E_XDP_ARGS=,busy_budget=0 appends devargs to the AF_XDP ports (that one turns off the
#   driver's preferred busy polling: see README.md, End to end).
#   E2E_RPS=0 leaves the end hosts' receive on the CPU that transmitted (under twinlane: its
#   lcore's; see end_hosts_rps); E2E_PROBE_NICE=-20 runs the probe above the bulk generators
#   (default: the same nice, -10).
# Exit: 0 all checks passed, 1 a check failed, 77 skipped (not root, tools missing).
set -uo pipefail

TWINLANE=${1:?usage: gateway_e2e.sh TWINLANE XDP_OBJECT XDP_CONFIG}
XDP_OBJ=${2:?usage}
XDP_CONFIG=${3:?usage}
RATE_MBIT=${E2E_RATE_MBIT:-300}
SECONDS_BULK=${E2E_SECONDS:-12}
ONLY=${E2E_ONLY:-twinlane twinlane-fifo kernel-prio kernel-fifo}

NS_C=tl-client NS_S=tl-server NS_G=tl-gw
IP_C=198.18.0.1 IP_S=198.18.0.2
PROBE_PORT=50051 BULK_PORT=5201

skip() { echo "SKIP: $*"; exit 77; }
# It needs root, creates namespaces, takes about 75 s, and measures latency and throughput,
# which only mean something on an otherwise idle machine: meson runs it alone (is_parallel
# false). TWINLANE_E2E=0 skips it (e.g. a root shell on a busy workstation).
[ "${TWINLANE_E2E:-1}" = 1 ] || skip "TWINLANE_E2E=${TWINLANE_E2E} (set to 1 or unset to run)"
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
for tool in ip tc ethtool iperf3 sockperf python3 timeout taskset; do
    command -v "$tool" >/dev/null || skip "$tool not installed (tools/setup.sh)"
done
[ -x "$TWINLANE" ] || skip "no twinlane binary at $TWINLANE"

WORK=$(mktemp -d /tmp/twinlane-e2e.XXXXXX)
PIDS=()
failures=0

# ns_kill NS [COMM]: ends the processes this test started in namespace NS (all of them, or those
# named COMM). `ip netns exec` forks, so the pid of a background `ip netns exec` is not the
# pid of the program.
ns_kill() {
    local pid
    for pid in $(ip netns pids "$1" 2>/dev/null); do
        if [ -z "${2:-}" ] || [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$2" ]; then
            kill "$pid" 2>/dev/null
        fi
    done
}

cleanup() {
    local pid
    ns_kill "$NS_C"
    ns_kill "$NS_S"
    ns_kill "$NS_G"
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null
    done
    # Deleting a namespace deletes the veth ends in it, and with them their peers.
    ip netns del "$NS_C" 2>/dev/null
    ip netns del "$NS_S" 2>/dev/null
    ip netns del "$NS_G" 2>/dev/null
    if [ "${E2E_KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
die() { echo "FAIL: $*"; exit 1; }
in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
# CPUs: under twinlane its forwarding lcore gets the last CPU to itself (a poll-mode core, as on
# a gateway with isolated CPUs) and the traffic generators the others. Unpinned, the scheduler
# sometimes ran iperf3 on the lcore's CPU, preempting the busy-polling lcore for milliseconds
# (probe p99 7.4 ms in one run). The kernel set-ups leave every CPU to the generators and the
# kernel's own forwarding (pinned there too, its probe p99 rose from ~1.8 to ~3.4 ms). The
# generators run at a raised priority so that other work disturbs the measurement less.
TL_CPU=$(($(nproc) - 1))
ALL_CPUS=0-$TL_CPU
GEN_CPUS=$ALL_CPUS  # set per set-up below
gen() {
    local ns=$1; shift
    ip netns exec "$ns" taskset -c "$GEN_CPUS" nice -n "${PRIO:-${E2E_GEN_NICE:--10}}" "$@"
}

# --- namespaces and veth pairs -------------------------------------------------------------
setup_namespaces() {
    local ns
    for ns in $NS_C $NS_S $NS_G; do
        if ip netns list | grep -qw "$ns"; then
            echo "note: removing namespace $ns left by an earlier run"
            ip netns del "$ns"
        fi
        ip netns add "$ns" || die "ip netns add $ns"
        ip -n "$ns" link set lo up
    done
    ip link add veth-c netns $NS_C type veth peer name veth-gw0 netns $NS_G || die "veth client"
    ip link add veth-s netns $NS_S type veth peer name veth-gw1 netns $NS_G || die "veth server"
    ip -n $NS_C addr add $IP_C/24 dev veth-c
    ip -n $NS_S addr add $IP_S/24 dev veth-s
    local pair
    for pair in "$NS_C veth-c" "$NS_S veth-s" "$NS_G veth-gw0" "$NS_G veth-gw1"; do
        set -- $pair
        # No IPv6 chatter (DAD, MLD, RS) in the counters; no checksum offload: a user-space
        # forwarder passes frames with partial checksums on unchanged, and the receiver would
        # drop them.
        in_ns "$1" sysctl -qw "net.ipv6.conf.$2.disable_ipv6=1"
        in_ns "$1" ethtool -K "$2" tx off rx off >/dev/null 2>&1 ||
            die "ethtool -K $2 tx off rx off"
        ip -n "$1" link set "$2" up
    done
    # GRO on the end hosts' veths (veth then receives through NAPI and merges TCP segments):
    # without it every 1500-byte segment costs a full TCP receive in whichever context
    # transmitted it, which for a user-space gateway is its TX syscall on the busy lcore.
    # Same setting for every gateway set-up below.
    in_ns $NS_C ethtool -K veth-c gro on >/dev/null 2>&1
    in_ns $NS_S ethtool -K veth-s gro on >/dev/null 2>&1
}

# end_hosts_rps MASK: the CPUs (hex mask, 0: off) on which the end hosts' veths hand received
# packets to their network stacks (RPS). veth receives in NAPI on the CPU that transmitted,
# which for a user-space gateway is its TX kick on the lcore's CPU: the client's and server's
# TCP stacks (four iperf3 streams) would run in softirq there. On a gateway whose hosts are
# other machines that work is theirs, so under twinlane it goes to the generators' CPUs (the
# NAPI poll itself, GRO's merge, stays). The kernel set-ups are left
# without RPS: their forwarding is itself softirq work on any CPU.
end_hosts_rps() {
    in_ns $NS_C sh -c "echo $1 > /sys/class/net/veth-c/queues/rx-0/rps_cpus" &&
        in_ns $NS_S sh -c "echo $1 > /sys/class/net/veth-s/queues/rx-0/rps_cpus" ||
        die "cannot set RPS on the end hosts' veths"
}

# --- load: iperf3 bulk + sockperf probe ------------------------------------------------------
# run_load NAME: prints "p50_us p99_us max_us observations bulk_mbit retransmits" to
# $WORK/NAME.result. Every process is bounded by timeout.
run_load() {
    local name=$1
    local t=$SECONDS_BULK
    PRIO=${E2E_PROBE_NICE:--10} gen $NS_S timeout $((t + 15)) sockperf server -i $IP_S -p $PROBE_PORT \
        >"$WORK/$name.sr.log" 2>&1 &
    local sr=$!
    PIDS+=("$sr")
    gen $NS_S timeout $((t + 15)) iperf3 -s -1 -B $IP_S -p $BULK_PORT \
        >"$WORK/$name.is.log" 2>&1 &
    local is=$!
    PIDS+=("$is")
    sleep 1
    # 2 s of slow start are left out of the throughput (-O 2).
    gen $NS_C timeout $((t + 10)) iperf3 -c $IP_S -p $BULK_PORT -P 4 -t "$t" -O 2 -J \
        >"$WORK/$name.iperf.json" 2>"$WORK/$name.iperf.err" &
    local ic=$!
    PIDS+=("$ic")
    sleep 3  # the queues are full after slow start
    PRIO=${E2E_PROBE_NICE:--10} gen $NS_C timeout $((t + 5)) sockperf ping-pong -i $IP_S -p $PROBE_PORT \
        -t $((t - 5)) --mps 1000 --full-rtt >"$WORK/$name.pp.log" 2>&1
    wait "$ic"
    ns_kill $NS_S sockperf
    ns_kill $NS_S iperf3
    wait "$sr" "$is" 2>/dev/null
    python3 - "$WORK/$name.pp.log" "$WORK/$name.iperf.json" >"$WORK/$name.result" <<'EOF'
import json, re, sys
pp = open(sys.argv[1]).read()
def pct(label):
    m = re.search(r'---> ' + label + r'\s*=\s*([0-9.]+)', pp)
    return float(m.group(1)) if m else -1.0
obs = re.search(r'Total (\d+) observations', pp)
try:
    d = json.load(open(sys.argv[2]))
    mbit = d['end']['sum_received']['bits_per_second'] / 1e6
    retr = d['end']['sum_sent'].get('retransmits', 0)
except Exception:
    mbit, retr = -1.0, -1
print(f"{pct('percentile 50.000'):.1f} {pct('percentile 99.000'):.1f} "
      f"{pct('<MAX> observation'):.1f} {obs.group(1) if obs else 0} {mbit:.1f} {retr}")
EOF
}

# --- the kernel as the gateway ---------------------------------------------------------------
kernel_setup() {  # kernel_setup prio|fifo
    in_ns $NS_G ip link add br0 type bridge || die "no bridge support"
    in_ns $NS_G ip link set veth-gw0 master br0
    in_ns $NS_G ip link set veth-gw1 master br0
    in_ns $NS_G ip link set br0 up
    local dev
    for dev in veth-gw0 veth-gw1; do
        local tcq=(in_ns $NS_G tc)
        "${tcq[@]}" qdisc add dev $dev root handle 1: htb default 20 || die "htb on $dev"
        "${tcq[@]}" class add dev $dev parent 1: classid 1:1 htb rate ${RATE_MBIT}mbit \
            ceil ${RATE_MBIT}mbit quantum 3028 || die "htb class"
        if [ "$1" = prio ]; then
            # The probe class may use the whole rate and is served first (prio 0); the rest
            # borrows what the probe leaves. One pfifo each (no fq_codel on this kernel).
            "${tcq[@]}" class add dev $dev parent 1:1 classid 1:10 htb \
                rate $((RATE_MBIT / 10))mbit ceil ${RATE_MBIT}mbit prio 0 quantum 3028
            "${tcq[@]}" class add dev $dev parent 1:1 classid 1:20 htb \
                rate $((RATE_MBIT * 9 / 10))mbit ceil ${RATE_MBIT}mbit prio 1 quantum 3028
            "${tcq[@]}" qdisc add dev $dev parent 1:10 pfifo limit 1000
            "${tcq[@]}" qdisc add dev $dev parent 1:20 pfifo limit 1000
            local match
            for match in dport sport; do
                "${tcq[@]}" filter add dev $dev parent 1: protocol ip prio 1 u32 \
                    match ip protocol 17 0xff match ip $match $PROBE_PORT 0xffff flowid 1:10 ||
                    die "u32 filter"
            done
        else
            "${tcq[@]}" class add dev $dev parent 1:1 classid 1:20 htb \
                rate ${RATE_MBIT}mbit ceil ${RATE_MBIT}mbit quantum 3028
            "${tcq[@]}" qdisc add dev $dev parent 1:20 pfifo limit 1000
        fi
    done
}

kernel_teardown() {
    in_ns $NS_G tc qdisc del dev veth-gw0 root 2>/dev/null
    in_ns $NS_G tc qdisc del dev veth-gw1 root 2>/dev/null
    in_ns $NS_G ip link del br0
}

# --- twinlane as the gateway -----------------------------------------------------------------
write_policy() {  # write_policy FILE twinlane|fifo MODE
    local file=$1 kind=$2 mode=$3 dev0 dev1
    if [ "$mode" = af_xdp ]; then
        dev0="net_af_xdp0,iface=veth-gw0,start_queue=0,queue_count=1,xdp_prog=$XDP_OBJ${E2E_XDP_ARGS:-}"
        dev1="net_af_xdp1,iface=veth-gw1,start_queue=0,queue_count=1,xdp_prog=$XDP_OBJ${E2E_XDP_ARGS:-}"
    else
        dev0="net_af_packet0,iface=veth-gw0,qpairs=1,qdisc_bypass=1"
        dev1="net_af_packet1,iface=veth-gw1,qpairs=1,qdisc_bypass=1"
    fi
    {
        cat <<EOF
version: 1
log_level: info
ports:
  - {name: client, device: "$dev0", rate: ${RATE_MBIT}M, tx_budget: ${E2E_TX_BUDGET:-3750B}}
  - {name: server, device: "$dev1", rate: ${RATE_MBIT}M, tx_budget: ${E2E_TX_BUDGET:-3750B}}
forwarding:
  - {from: client, to: server}
  - {from: server, to: client}
lcores: {single: 1}
control: {socket: $WORK/twinlane.sock}
metrics: {enabled: false}
EOF
        if [ "$kind" = twinlane ]; then
            cat <<EOF
classes: [inference, training, other]
scheduler:
  name: root
  kind: strict
  children:
    - {name: inference, kind: fq, class: inference}
    - name: rest
      kind: drr
      children:
        - {name: training, kind: fq, class: training, weight: 4}
        - {name: other, kind: fifo, class: other, weight: 1}
classifier:
  rules:
    - {name: rpc, priority: 10, match: {proto: udp, dst_port: $PROBE_PORT}, action: {class: inference}}
    - {name: rpc-reply, priority: 11, match: {proto: udp, src_port: $PROBE_PORT}, action: {class: inference}}
    - {name: bulk, priority: 20, match: {proto: tcp, dst_port: $BULK_PORT}, action: {class: training}}
    - {name: bulk-acks, priority: 21, match: {proto: tcp, src_port: $BULK_PORT}, action: {class: training}}
  heuristics: {default_class: other}
EOF
        else
            # The same lane count and limits as the kernel's pfifo (1000 packets), one queue.
            cat <<EOF
classes: [all]
scheduler:
  name: root
  kind: strict
  children:
    - {name: all, kind: fifo, class: all, limit: {packets: 1000}}
EOF
        fi
    } >"$file"
}

# CPU time in softirq and in the kernel on one CPU so far, ms (/proc/stat, USER_HZ ticks): the
# veth receive work that twinlane's TX system calls run on its lcore's CPU shows as softirq.
cpu_kernel_ms() {  # cpu_kernel_ms CPU -> "SOFTIRQ_MS SYSTEM_MS"
    awk -v cpu="cpu$1" -v hz="$(getconf CLK_TCK)" \
        '$1 == cpu { printf "%d %d\n", $8 * 1000 / hz, $4 * 1000 / hz }' /proc/stat
}

TL_PID=
TL_KERNEL_START=
TL_STARTED_AT=
twinlane_start() {  # twinlane_start NAME twinlane|fifo MODE: 0 when forwarding
    local name=$1 kind=$2 mode=$3
    write_policy "$WORK/$name.yaml" "$kind" "$mode"
    "$TWINLANE" check -c "$WORK/$name.yaml" >"$WORK/$name.check" 2>&1 ||
        die "policy $name: $(cat "$WORK/$name.check")"
    # One lcore on CPU $TL_CPU, which twinlane busy-polls (the veth receive work of what it
    # sends runs there too, in its TX system calls). --duration bounds the run.
    in_ns $NS_G nice -n "${E2E_TWINLANE_NICE:--20}" "$TWINLANE" run -c "$WORK/$name.yaml" --json --duration $((SECONDS_BULK + 40)) \
        -- --no-huge --no-pci --no-shconf -m 512 -l "$TL_CPU" --log-level=error \
        >"$WORK/$name.json" 2>"$WORK/$name.err" &
    TL_PID=$!
    PIDS+=("$TL_PID")
    local i
    for i in $(seq 1 100); do  # at most 10 s
        grep -q "forwarding with policy" "$WORK/$name.err" && break
        kill -0 "$TL_PID" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -q "forwarding with policy" "$WORK/$name.err"; then
        ns_kill $NS_G twinlane
        wait "$TL_PID" 2>/dev/null
        return 1
    fi
    if [ "$mode" = af_xdp ]; then
        # Hosts on both sides must resolve each other through the bump in the wire: ARP not
        # about the gateway's own addresses goes to twinlane (it has none on these veths).
        in_ns $NS_G "$XDP_CONFIG" --wait 5 --forward-foreign-arp-nd veth-gw0 veth-gw1 \
            >"$WORK/$name.xdpcfg" 2>&1 || { cat "$WORK/$name.xdpcfg"; return 1; }
    fi
    # Reachability through twinlane (ARP included), bounded: 2 s of ping-pong, up to three
    # tries (a first message lost while ARP resolves, or a server slow to start on a busy
    # machine, leaves sockperf waiting until its timeout).
    local settle reached=0
    for settle in 0.5 1 2; do
        in_ns $NS_S timeout 8 sockperf server -i $IP_S -p $PROBE_PORT >/dev/null 2>&1 &
        local sr=$!
        sleep "$settle"
        in_ns $NS_C timeout 5 sockperf ping-pong -i $IP_S -p $PROBE_PORT -t 2 --mps 100 \
            >"$WORK/$name.reach" 2>&1
        ns_kill $NS_S sockperf
        wait "$sr" 2>/dev/null
        if grep -qE 'Total [1-9][0-9]* observations' "$WORK/$name.reach"; then
            reached=1
            break
        fi
    done
    [ "$reached" = 1 ] || return 1
    TL_KERNEL_START=$(cpu_kernel_ms "$TL_CPU")
    TL_STARTED_AT=$(date +%s%N)
}

twinlane_stop() {  # twinlane_stop NAME: stops twinlane, checks its own accounting
    local name=$1
    local kernel_end ran_ms
    kernel_end=$(cpu_kernel_ms "$TL_CPU")
    ran_ms=$(( ($(date +%s%N) - TL_STARTED_AT) / 1000000 ))
    ns_kill $NS_G twinlane  # SIGTERM: stop receiving, drain, report
    wait "$TL_PID"
    local rc=$?
    python3 - "$WORK/$name.json" "$TL_CPU" "$TL_KERNEL_START" "$kernel_end" "$ran_ms" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"FAIL: twinlane printed no JSON report ({e})"); sys.exit(1)
def total(k):
    v = d.get(k, 0)
    return sum(v.values()) if isinstance(v, dict) else v
print(f"  twinlane: rx {d.get('rx_packets', '?')} tx {d.get('tx_packets', '?')} "
      f"dropped {json.dumps(d.get('dropped', {}))} queued {d.get('queued', '?')}")
us = lambda c, k: c.get(k, 0) / 1000
for c in d.get('classes', []):
    print(f"    class {c.get('name')}: rx {c.get('rx_packets')} tx {c.get('tx_packets')} "
          f"dropped {c.get('dropped')} in-gateway latency mean {us(c, 'latency_mean_ns'):.1f} us, "
          f"p50 {us(c, 'latency_p50_ns'):.1f}, p99 {us(c, 'latency_p99_ns'):.1f}, "
          f"p99.9 {us(c, 'latency_p999_ns'):.1f}, max {us(c, 'latency_max_ns'):.1f}")
for l in d.get('loops', []):
    print(f"    {l['role']}: {l['busy_passes']} busy loop passes, p50 {l['pass_p50_ns'] / 1000:.1f} us, "
          f"p99 {l['pass_p99_ns'] / 1000:.1f}, p99.9 {l['pass_p999_ns'] / 1000:.1f}, "
          f"max {l['pass_max_ns'] / 1000:.1f}, inputs unpolled at most "
          f"{l['poll_gap_max_ns'] / 1000:.1f}"
          + (f"; its CPU taken {l['runqueue_wait_ns'] / 1e6:.1f} ms in "
             f"{l['involuntary_switches']} preemptions" if "runqueue_wait_ns" in l else ""))
cpu, (s0, k0), (s1, k1), ran = sys.argv[2], sys.argv[3].split(), sys.argv[4].split(), int(sys.argv[5])
if ran > 0:
    print(f"    CPU {cpu} (the lcore's) while the load ran: softirq {int(s1) - int(s0)} ms, "
          f"system {int(k1) - int(k0)} ms of {ran} ms")
EOF
    # Exit 1 = accounting mismatch or an mbuf leak (twinlane allows for the mbufs DPDK's
    # af_xdp driver keeps on its fill rings at close, and logs how many).
    [ $rc -eq 0 ] || fail "twinlane ($name) exited $rc: $(tail -3 "$WORK/$name.err")"
    grep -h 'stay on the af_xdp' "$WORK/$name.err" | sed 's/^.*\] /  note: /;s/^20[^ ]* [a-z]* /  note: /'
}

# --- run ------------------------------------------------------------------------------------
setup_namespaces
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) (other work skews the numbers)"
echo "e2e: $NS_C $IP_C <-> $NS_G <-> $NS_S $IP_S, rate ${RATE_MBIT} Mbit/s, ${SECONDS_BULK} s per set-up"
echo "CPUs: under twinlane its lcore on CPU $TL_CPU, the generators and the end hosts' receive (RPS) on the others; kernel set-ups: all CPUs"
echo "load: iperf3 -P 4 TCP to port $BULK_PORT (training); sockperf UDP ping-pong port $PROBE_PORT, 1000/s (inference)"

MODE=${E2E_PORTS:-af_xdp}
declare -A RESULT
for setup in $ONLY; do
    case $setup in
    twinlane | twinlane-fifo)
        GEN_CPUS=0-$((TL_CPU > 0 ? TL_CPU - 1 : 0))
        [ "${E2E_RPS:-1}" = 0 ] || end_hosts_rps "$(printf '%x' $(((1 << TL_CPU) - 1)))"
        kind=twinlane
        [ "$setup" = twinlane-fifo ] && kind=fifo
        if [ "$MODE" = af_xdp ] && [ ! -f "$XDP_OBJ" ]; then
            echo "note: no XDP object at $XDP_OBJ (clang missing?): AF_PACKET ports instead of AF_XDP"
            MODE=af_packet
        fi
        if ! twinlane_start "$setup" "$kind" "$MODE"; then
            if [ "$MODE" = af_xdp ]; then
                echo "note: AF_XDP ports did not forward here: $(grep -m1 -iE 'error|fail' \
                    "$WORK/$setup.err" || echo "no reply through it in 3 tries:" \
                    "$(tail -1 "$WORK/$setup.reach" 2>/dev/null)")"
                echo "note: falling back to AF_PACKET ports (net_af_packet)"
                MODE=af_packet
                twinlane_start "$setup" "$kind" "$MODE" ||
                    die "twinlane ($setup) does not forward on AF_PACKET either: $(tail -3 \
                        "$WORK/$setup.err"; tail -1 "$WORK/$setup.reach" 2>/dev/null)"
            else
                die "twinlane ($setup) does not forward: $(tail -3 "$WORK/$setup.err")"
            fi
        fi
        echo "== $setup: twinlane run on $MODE ports"
        run_load "$setup"
        [ "$MODE" = af_xdp ] && in_ns $NS_G "$XDP_CONFIG" --stats veth-gw0 veth-gw1 | sed 's/^/  xdp /'
        twinlane_stop "$setup"
        end_hosts_rps 0
        ;;
    kernel-prio | kernel-fifo)
        GEN_CPUS=$ALL_CPUS
        echo "== $setup: Linux bridge + HTB ${RATE_MBIT} Mbit/s (${setup#kernel-})"
        kernel_setup "${setup#kernel-}"
        run_load "$setup"
        kernel_teardown
        ;;
    *) die "unknown set-up '$setup' in E2E_ONLY" ;;
    esac
    RESULT[$setup]=$(cat "$WORK/$setup.result")
    echo "  probe p50/p99/max RTT us, samples, bulk Mbit/s, retransmits: ${RESULT[$setup]}"
done

echo
printf '%-15s %12s %12s %12s %9s %12s %8s\n' gateway 'p50 RTT us' 'p99 RTT us' 'max RTT us' \
    samples 'bulk Mbit/s' '% rate'
for setup in $ONLY; do
    read -r p50 p99 max n mbit retr <<<"${RESULT[$setup]}"
    printf '%-15s %12s %12s %12s %9s %12s %7.1f%%\n' "$setup" "$p50" "$p99" "$max" "$n" "$mbit" \
        "$(python3 -c "print($mbit * 100 / $RATE_MBIT)")"
done
echo "(twinlane ports: $MODE)"

field() { read -r -a f <<<"${RESULT[$1]}"; echo "${f[$2]}"; }
ratio() { python3 -c "a, b = $1, $2; print(f'{a / b:.1f}' if b > 0 else 'inf')"; }
ok() { python3 -c "import sys; sys.exit(0 if $1 else 1)"; }
check() { if ok "$1"; then pass "$2"; else fail "$3"; fi; }  # check CONDITION PASS FAIL
# goal CONDITION PASS FAIL: a comparison with the kernel, or a throughput, that depends on how
# much idle CPU the machine has besides the lcore's (on a shared 2-core CI VM the one CPU left
# for four iperf3 streams, the probe and both end hosts' stacks decides it): reported, and a
# failure only with E2E_STRICT=1 (for a measurement on an idle machine).
goal() {
    if ok "$1"; then
        pass "$2"
    elif [ "${E2E_STRICT:-0}" = 1 ]; then
        fail "$3"
    else
        echo "GOAL MISSED (E2E_STRICT=1 fails on it): $3"
    fi
}

for setup in $ONLY; do
    # ping-pong is synchronous: fewer samples when the RTT is long; 300 still give a p99, and
    # a FIFO's RTT in the tens of ms leaves fewer (its p99 is then close to its max).
    min_samples=300
    [ "${setup%-fifo}" != "$setup" ] && min_samples=50
    [ "$(field "$setup" 3)" -ge $min_samples ] || fail "$setup: only $(field "$setup" 3) probe samples"
done
if [ -n "${RESULT[twinlane]:-}" ]; then
    tl99=$(field twinlane 1)
    mbit=$(field twinlane 4)
    goal "$mbit >= 0.9 * $RATE_MBIT" \
        "twinlane bulk throughput $mbit Mbit/s >= 90% of $RATE_MBIT" \
        "twinlane bulk throughput $mbit Mbit/s < 90% of $RATE_MBIT"
    if [ -n "${RESULT[twinlane-fifo]:-}" ]; then
        f99=$(field twinlane-fifo 1)
        echo "p99 RTT twinlane-fifo / twinlane = $(ratio "$f99" "$tl99")"
        check "$tl99 > 0 and $tl99 * 5 <= $f99" \
            "twinlane probe p99 $tl99 us is at least 5x below its FIFO policy's $f99 us" \
            "twinlane probe p99 $tl99 us is not 5x below its FIFO policy's $f99 us"
    fi
    if [ -n "${RESULT[kernel-prio]:-}" ]; then
        k99=$(field kernel-prio 1)
        echo "p99 RTT kernel-prio / twinlane = $(ratio "$k99" "$tl99")"
        goal "$tl99 > 0 and $tl99 < $k99" \
            "twinlane probe p99 $tl99 us is below the kernel's best (HTB priority) $k99 us" \
            "twinlane probe p99 $tl99 us is not below the kernel's best (HTB priority) $k99 us"
    fi
    if [ -n "${RESULT[kernel-fifo]:-}" ]; then
        echo "p99 RTT kernel-fifo / twinlane = $(ratio "$(field kernel-fifo 1)" "$tl99")"
    fi
fi
if [ -n "${RESULT[kernel-prio]:-}" ] && [ -n "${RESULT[kernel-fifo]:-}" ]; then
    echo "p99 RTT kernel-fifo / kernel-prio = $(ratio "$(field kernel-fifo 1)" "$(field kernel-prio 1)")"
fi

[ $failures -eq 0 ] || { echo "e2e: $failures check(s) failed"; exit 1; }
echo "e2e: all checks passed"
