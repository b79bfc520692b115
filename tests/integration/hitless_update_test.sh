#!/usr/bin/env bash
# Hitless policy changes: the daemon (`twinlane run -c`, RX lcore + scheduler lcore) forwards a
# paced stream of 9 sequence-numbered flows (flow_stream.py: ~10k frames/s, ~68 Mbit/s in 10 ms
# bursts, so the 100M port's training queue is rarely empty) from a FIFO read by net_pcap to a
# pcap file, while hitless_driver.py makes 6 x ITERATIONS changes through twinlanectl (policy
# loads alternating between two tree shapes, weights, rates, limits, rules add/del) and checks
# each took effect on the lcores, then checks that refused changes leave everything untouched
# and that a garbage request gets an error reply. At the end:
#  - every generated frame came out, each flow complete and in sequence order (no loss, no
#    reordering within a flow), rx = tx with zero drops of any cause and nothing queued,
#  - no mbuf leaked, and the daemon exited 0 after SIGTERM.
# Usage: hitless_update_test.sh TWINLANE TWINLANECTL [ITERATIONS]
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
twinlanectl=$(realpath "$2")
iterations=${3:-18}
here=$(cd "$(dirname "$0")" && pwd)
cd "$WORK"

for p in a b; do
    sed -e "s#WORK#$WORK#g" -e "s/METRICS/false/" "$here/hitless_$p.yaml" >"policy_$p.yaml"
done
# Two lcores that may float over CPUs 0-1: on a shared 2-core machine a pinned lcore can be
# starved by another busy-polling process on its CPU.
EAL=("${EAL_BASE[@]}" --lcores '0@(0-1),1@(0-1)')

start_stream 150
start_daemon "$twinlane" --json --idle-exit never --lane-ring-slots 32768 --drain-timeout 10000 \
    -c policy_a.yaml -- "${EAL[@]}"

timeout 150 python3 "$here/hitless_driver.py" "$twinlanectl" "$WORK/twinlane.sock" \
    "$WORK/policy_a.yaml" "$WORK/policy_b.yaml" "$iterations" >driver.txt ||
    fail "driver: $(cat driver.txt) (daemon log tail: $(tail -5 daemon.log))"

# One more second of traffic after the last change, then end the stream and wait until the
# daemon has read and sent all of it.
sleep 1
touch stop
wait "$stream_writer" || fail "stream writer failed"
stream_writer=""
total=$(json_field summary.json total)
for _ in $(seq 600); do
    ports=$("$twinlanectl" -s twinlane.sock -j stats ports) || fail "stats ports failed"
    rx=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[0]["rx_packets"])' "$ports")
    tx=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[1]["tx_packets"])' "$ports")
    [ "$rx" -ge "$total" ] && [ "$tx" -ge "$rx" ] && break
    sleep 0.1
done
kill -TERM "$daemon"
rc=0
wait "$daemon" || rc=$?
daemon=""
[ "$rc" -eq 0 ] || fail "daemon exited $rc: $(tail -20 daemon.log)"
[ ! -e twinlane.sock ] || fail "control socket left behind after exit"

python3 - report.json "$total" <<'PY' || fail "final counters: $(cat report.json)"
import json, sys
c = json.load(open(sys.argv[1]))
total = int(sys.argv[2])
dropped = {k: v for k, v in c["dropped"].items() if v}
assert c["rx_packets"] == total, f"rx {c['rx_packets']} of {total} generated"
assert c["tx_packets"] == total and not dropped and c["queued"] == 0, (c["tx_packets"], dropped)
assert c["mbufs"]["in_use_start"] == c["mbufs"]["in_use_end"], c["mbufs"]
PY
order=$(python3 "$here/flow_stream.py" check out.pcap summary.json) ||
    fail "output pcap: flows lost or reordered (see above)"
applied=$(grep -c "applied (" daemon.log || true)
swaps=$(python3 - daemon.log <<'PY'
import re, sys
text = open(sys.argv[1]).read()
moved = [int(n) for n in re.findall(r"\((\d+) queued packets migrated\)", text)]
rebuilt = len(re.findall(r"applied \(.*\): 1 tree\(s\) rebuilt", text))
micros = sorted(int(n) for n in re.findall(r"rules \w+ \((\d+) us\)", text))
print(f"{sum(1 for m in moved if m)} of {rebuilt} tree swaps moved queued packets "
      f"({sum(moved)} packet moves); applied in the daemon in median {micros[len(micros) // 2]} us, "
      f"max {micros[-1]} us")
PY
)
echo "PASS: $(cat driver.txt)"
echo "PASS: $order; rx = tx = $total, 0 dropped, 0 queued, no mbuf leak;" \
     "$applied versions applied by the lcores; $swaps"
