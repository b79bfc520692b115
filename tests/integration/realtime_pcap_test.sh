#!/usr/bin/env bash
# The realtime pipeline (`twinlane run -c`) on pcap vdevs: 200 bulk 9000-byte frames, then one
# inference frame (TCP to 50051), paced at 1G.
#  1. Run-to-completion (one lcore), small tx_budget (2 jumbo frames): the inference frame
#     leaves before most of the bulk burst.
#  2. Same with an effectively unlimited tx_budget: the scheduler hands the bulk to the "NIC"
#     as it arrives, so the inference frame queues behind it (the budget is what helps).
#  3. RX lcore + scheduler lcore (-l 0-1): same frames out, counters balance, roles as planned.
#  4. Ports of mtu 1500: the jumbo frames dropped as oversize, counted, and said once.
# Every run of 1-3: all 201 frames out, rx = tx + dropped + queued, mbufs in use back to the start.
# Latency is reported as link time ahead of the inference frame (position x 9038 B at 1G):
# what a real NIC's FIFO ring would add; a pcap writer has no ring.
# Usage: realtime_pcap_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
cd "$WORK"
python3 "$here/lanes_pcap.py" gen in.pcap --bulk 200 --bulk-bytes 9000

run() {  # run TX_BUDGET LCORES EAL_LCORES
    sed -e "s/TX_BUDGET/$1/" -e "s/LCORES/$2/" "$here/realtime_pcap.yaml" >policy.yaml
    rm -f out.pcap
    timeout 60 "$twinlane" --log-level warn run --json -c policy.yaml -- "${EAL_BASE[@]}" -l "$3" \
        >counters.json || fail "run (tx_budget $1, lcores $2) exited non-zero: $(cat counters.json)"
    python3 - counters.json <<'PY' || fail "counters of tx_budget $1, lcores $2"
import json, sys
c = json.load(open(sys.argv[1]))
dropped = sum(c["dropped"].values())
assert c["rx_packets"] == 201 and c["tx_packets"] == 201, c
assert c["rx_packets"] == c["tx_packets"] + dropped + c["queued"], c
assert c["mbufs"]["in_use_start"] == c["mbufs"]["in_use_end"], c["mbufs"]
inference = [k for k in c["classes"] if k["name"] == "inference"][0]
assert inference["tx_packets"] == 1, inference
# The PMD's own counters are reported per port; the pcap PMD loses nothing here.
for port in c["ports"]:
    nic = port["nic"]
    assert set(nic) == {"rx_missed", "rx_errors", "rx_nombuf", "tx_errors"}, port
    assert all(v == 0 for v in nic.values()), port
PY
    [ "$(python3 "$here/lanes_pcap.py" position out.pcap)" -ge 0 ] || fail "no inference frame out"
    python3 "$here/lanes_pcap.py" position out.pcap
}

small=$(run 18036 "{single: 0}" 0)
[ "$small" -lt 60 ] || fail "small tx_budget: inference frame left after $small of 200 bulk frames"
echo "PASS: tx_budget 18036 B: inference frame left after $small bulk frames" \
     "($(( small * 9038 * 8 / 1000 )) us of 1G link time)"

large=$(run 256MiB "{single: 0}" 0)
[ "$large" -gt 150 ] || fail "unlimited tx_budget: inference frame left after only $large frames"
[ "$large" -gt "$small" ] || fail "budget had no effect ($small vs $large)"
echo "PASS: tx_budget 256 MiB: inference frame left after $large bulk frames" \
     "($(( large * 9038 * 8 / 1000 )) us of 1G link time)"

two=$(run 18036 auto 0-1)
grep -q '"lcore 0: rx in/0"' counters.json || fail "lcore 0 is not the RX lcore: $(cat counters.json)"
grep -q '"lcore 1: sched out"' counters.json || fail "lcore 1 is not the scheduler lcore"
[ "$two" -lt 60 ] || fail "2 lcores: inference frame left after $two bulk frames"
python3 - "$here" in.pcap out.pcap <<'PY' || fail "2 lcores: bulk frames reordered or altered"
import sys
sys.path.insert(0, sys.argv[1])
import lanes_pcap
sent = [f for f in lanes_pcap.read(sys.argv[2]) if not lanes_pcap.is_inference(f)]
got = [f for f in lanes_pcap.read(sys.argv[3]) if not lanes_pcap.is_inference(f)]
assert sent == got, "bulk frames differ"
PY
echo "PASS: 2 lcores (RX lcore 0, scheduler lcore 1): inference after $two bulk frames, counters balance"

# 4. The same frames to ports of mtu 1500: the 200 jumbo frames are dropped as oversize, counted,
#    and said once in the log (which ports, their largest frame), the inference frame goes out.
sed -e "s/TX_BUDGET/18036/" -e "s/LCORES/{single: 0}/" -e "s/mtu: 9000/mtu: 1500/" \
    "$here/realtime_pcap.yaml" >policy.yaml
rm -f out.pcap
timeout 60 "$twinlane" --log-level warn run --json -c policy.yaml -- "${EAL_BASE[@]}" -l 0 \
    >counters.json 2>run.log || fail "run (mtu 1500) exited non-zero: $(cat run.log)"
python3 - counters.json <<'PY' || fail "counters of the mtu 1500 run"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["rx_packets"] == 201 and c["tx_packets"] == 1, c
assert c["dropped"]["sched_oversize"] == 200, c["dropped"]
assert c["rx_packets"] == c["tx_packets"] + sum(c["dropped"].values()) + c["queued"], c
assert c["mbufs"]["in_use_start"] == c["mbufs"]["in_use_end"], c["mbufs"]
PY
[ "$(grep -c "dropped as oversize" run.log)" -eq 1 ] ||
    fail "oversize drops not said once in the log: $(cat run.log)"
grep -q "'out' mtu 1500 (1518 B)" run.log || fail "oversize warning names no port: $(cat run.log)"
echo "PASS: mtu 1500: 200 jumbo frames dropped as oversize and said once, inference frame out"
