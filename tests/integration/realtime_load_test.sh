#!/usr/bin/env bash
# The realtime pipeline under endless load (net_null in a bump in the wire):
#  1. 2 lcores (-l 0-1, RX lcore + scheduler lcore), --duration 2: stops by itself in bounded
#     time, packets flow both ways, rx = tx + dropped by cause + queued, no mbuf leak.
#  2. SIGTERM with --stop-mode drop and with --stop-mode drain (run-to-completion): exit 0,
#     counters balance, every mbuf back in its pool (the binary also checks both itself); the
#     10G ports, offered 1500-byte frames as fast as net_null makes them, report link-bound time.
#  3. A policy device that cannot be probed: non-zero exit, the error names the policy port.
#  4. An egress-only net_ring port: refused packets counted once, its ring's mbufs freed at exit,
#     and no link-bound time (the NIC held the packets back, not the port's rate).
# Usage: realtime_load_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$1
here=$(cd "$(dirname "$0")" && pwd)

policy() {  # policy LCORES DEVICE_ARGS
    sed -e "s/LCORES/$1/" -e "s/DEVICE_ARGS/$2/" "$here/realtime_null.yaml" >"$WORK/policy.yaml"
}

check_balance() {  # check_balance FILE WHAT
    python3 - "$1" <<'PY' || fail "$2: counters do not balance or mbufs leaked: $(cat "$1")"
import json, sys
c = json.load(open(sys.argv[1]))
dropped = sum(c["dropped"].values())
assert c["rx_packets"] > 0 and c["tx_packets"] > 0, c
assert c["rx_packets"] == c["tx_packets"] + dropped + c["queued"], c
assert c["queued"] == 0, c
assert c["mbufs"]["in_use_start"] == c["mbufs"]["in_use_end"], c["mbufs"]
for p in c["ports"]:
    assert p["rx_packets"] > 0 and p["tx_packets"] > 0, p
PY
}

policy auto ""
timeout 30 "$twinlane" --log-level warn run --json --duration 2 -c "$WORK/policy.yaml" -- \
    "${EAL_BASE[@]}" -l 0-1 >"$WORK/two.json" || fail "2-lcore run exited non-zero"
check_balance "$WORK/two.json" "2 lcores"
grep -q '"lcore 1: sched east sched west"\|"lcore 1: sched west sched east"' "$WORK/two.json" ||
    fail "lcore 1 does not schedule both ports: $(cat "$WORK/two.json")"
echo "PASS: 2 lcores under load: $(json_field "$WORK/two.json" tx_packets) packets forwarded in" \
     "2 s, counters balance, no mbuf leak"

for mode in drop drain; do
    policy "{single: 0}" ",size=1500"
    "$twinlane" --log-level info run --json --stop-mode "$mode" -c "$WORK/policy.yaml" -- \
        "${EAL_BASE[@]}" -l 0 >"$WORK/$mode.json" 2>"$WORK/log.txt" &
    pid=$!
    for _ in $(seq 100); do  # bounded wait (10 s) for the pipeline to start
        grep -q "forwarding with policy" "$WORK/log.txt" && break
        sleep 0.1
    done
    grep -q "forwarding with policy" "$WORK/log.txt" || fail "did not start: $(cat "$WORK/log.txt")"
    kill -TERM "$pid"
    timeout 10 tail --pid="$pid" -f /dev/null || fail "did not stop within 10 s (stop-mode $mode)"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" -eq 0 ] || fail "exit code $rc after SIGTERM (stop-mode $mode): $(cat "$WORK/log.txt")"
    check_balance "$WORK/$mode.json" "stop-mode $mode"
    # 1500-byte frames from net_null outrun a 10G port many times over: its rate holds packets
    # back in the tree, and the run report says for how long (within the run).
    bound=$(python3 - "$WORK/$mode.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for p in c["ports"]:
    assert 0 < p["tx_link_bound_ns"] <= c["elapsed_s"] * 1e9, (p, c["elapsed_s"])
print(", ".join(f"{p['tx_link_bound_ns'] / 1e9:.3f}" for p in c["ports"]), f"s of {c['elapsed_s']:.3f} s")
PY
) || fail "stop-mode $mode: link-bound time: $(cat "$WORK/$mode.json")"
    echo "PASS: SIGTERM with --stop-mode $mode: exit 0, counters balance, no mbuf leak," \
         "link-bound $bound"
done

sed -e 's/net_null0DEVICE_ARGS/net_pcap9,rx_pcap=\/nonexistent\/in.pcap/' -e 's/DEVICE_ARGS//' \
    -e 's/LCORES/auto/' "$here/realtime_null.yaml" >"$WORK/bad.yaml"
rc=0
"$twinlane" run -c "$WORK/bad.yaml" -- "${EAL_BASE[@]}" -l 0 >"$WORK/bad.txt" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "exit code 0 with a device that cannot be probed"
grep -q "port 'west': cannot probe device 'net_pcap9" "$WORK/bad.txt" ||
    fail "error does not name the port: $(cat "$WORK/bad.txt")"
echo "PASS: unusable device reported: $(grep -o "port 'west': cannot probe[^:]*" "$WORK/bad.txt")"

# 4. An egress-only net_ring port (transmitted to, never read: its ring fills after 1023 frames
#    and refuses the rest): tx_refused counts refused packets, not the re-offers of a full ring
#    (millions a second), and the frames left in the ring go back to the pool at exit (no false
#    "mbuf leak").
cat >"$WORK/ring.yaml" <<YAML
version: 1
ports:
  - {name: in, device: "net_null0,size=64", rate: 1G}
  - {name: r, device: net_ring0, rate: 100G, tx_budget: 256MiB, rx_descriptors: 64,
     tx_descriptors: 64}
forwarding: [{from: in, to: r}]
lcores: {single: 0}
classes: [other]
scheduler: {name: root, kind: fifo, class: other, limit: {packets: 4096}}
classifier: {heuristics: {default_class: other}}
metrics: {enabled: false}
YAML
rc=0
"$twinlane" --log-level warn run --json --no-control --duration 1 -c "$WORK/ring.yaml" -- \
    "${EAL_BASE[@]}" -l 0 >"$WORK/ring.json" 2>"$WORK/ring.err" || rc=$?
[ "$rc" -eq 0 ] || fail "egress-only ring: exit $rc: $(cat "$WORK/ring.err")"
python3 - "$WORK/ring.json" <<'PY' || fail "egress-only ring: $(cat "$WORK/ring.json")"
import json, sys
c = json.load(open(sys.argv[1]))
r = c["ports"][1]
assert r["tx_packets"] == 1023, r
assert 0 < r["tx_refused"] <= c["rx_packets"] - r["tx_packets"], r
# The NIC held the packets back, not the port's 100G rate: no link-bound time.
assert r["tx_link_bound_ns"] == 0, r
assert c["rx_packets"] == c["tx_packets"] + sum(c["dropped"].values()) + c["queued"], c
assert c["mbufs"]["in_use_start"] == c["mbufs"]["in_use_end"], c["mbufs"]
print(f"PASS: egress-only ring: tx {r['tx_packets']}, refused {r['tx_refused']} packets "
      f"of {c['rx_packets']} received, mbufs back to {c['mbufs']['in_use_end']}")
PY
