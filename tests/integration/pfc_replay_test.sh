#!/usr/bin/env bash
# Lossless training in virtual time (`twinlane replay`, conf/lossless.yaml): an 8:1 incast of
# RoCEv2 flows (8 jobs x 2 ranks, DSCP 26 -> priority 3) at 2x the 10G egress for 50 ms, with
# inference beside it:
#   - no training drop; pause frames sent; training leaves at the rate inference leaves it;
#     the senders' held packets are delayed, never lost (rx = tx + dropped + queued);
#   - inference p99 within 1% of the same run without lossless (training then tail-dropped);
#   - the egress peer pausing priority 3 for 2 ms at t = 10 ms holds training for 2 ms while
#     inference keeps leaving, and still nothing is dropped.
# Usage: pfc_replay_test.sh TWINLANE POLICY
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
policy=$(realpath "$2")
cd "$WORK"
"$twinlane" gen -o incast.pcap --link-rate 10G --duration 50ms --training-load 2.0 \
    --inference-load 0.05 --other-load 0 --jobs 8 --flows-per-job 2 --roce-only --seed 3 >/dev/null
sed '/lossless: {priority/d' "$policy" >lossy.yaml
replay() {  # replay POLICY NAME [args]
    local p=$1 name=$2
    shift 2
    "$twinlane" --log-level warn replay -c "$p" -i incast.pcap --port east \
        --report "$name.json" -o "$name.pcap" "$@" >"$name.txt" || fail "$name: replay exited non-zero"
}
replay "$policy" lossless
replay lossy.yaml lossy
replay "$policy" paused --pfc-pause 10ms:3:2ms
python3 - lossless.json lossy.json paused.json paused.pcap <<'PY' || fail "lossless replay"
import json, struct, sys
lossless, lossy, paused = (json.load(open(f)) for f in sys.argv[1:4])
for r in (lossless, lossy, paused):
    t = r["totals"]
    assert t["rx_packets"] == t["tx_packets"] + sum(t["dropped"].values()) + t["queued_at_end"], t
for r, idle_ms in ((lossless, 0), (paused, 2)):
    training = r["classes"]["training"]
    assert training["drops"] == 0 and training["rx_packets"] == 30088, training["drops"]
    pfc = r["pfc"][0]
    assert pfc["priority"] == 3 and pfc["pause_frames_sent"] > 10 and pfc["packets_held"] > 0, pfc
    assert pfc["still_held"] == 0, pfc
    # Backlogged, training takes what inference leaves of the 10G link (less the peer's pause).
    b = training["backlogged"]
    assert b["share_of_left_capacity"] > 0.99 - idle_ms / 1e3 / b["seconds"], b
assert lossy["classes"]["training"]["drops"] > 10000  # without PFC, the incast is tail-dropped
p99 = lambda r: r["classes"]["inference"]["latency_us"]["p99"]
assert abs(p99(lossless) - p99(lossy)) <= 0.01 * p99(lossy), (p99(lossless), p99(lossy))
pfc = paused["pfc"][0]
assert pfc["pause_frames_received"] == 3 and abs(pfc["egress_paused_ms"] - 2.0) < 1e-6, pfc
# Departures (last bit) during the pause: inference only.
data = open(sys.argv[4], "rb").read()
off, during = 24, {6: 0, 17: 0}
while off + 16 <= len(data):
    sec, ns, caplen, _ = struct.unpack_from("<IIII", data, off)
    t = sec + ns / 1e9
    if 0.0101 <= t <= 0.0119:
        during[data[off + 16 + 23]] = during.get(data[off + 16 + 23], 0) + 1
    off += 16 + caplen
assert during[17] == 0 and during[6] > 20, during
print(f"PASS: incast 2x for 50 ms: 0 training drops, {lossless['pfc'][0]['pause_frames_sent']} "
      f"pause frames, inference p99 {p99(lossless)} us vs {p99(lossy)} us lossy; peer pause 2 ms: "
      f"{during[6]} inference and 0 training departures during it")
PY

# A pause as long as the option allows (1 h) is sent as a switch sends it, one refresh at a
# time (some 2 million frames at 10G): the replay finishes, the watchdog ends the storm, every
# packet is accounted for. Longer is refused, named.
replay "$policy" hour --pfc-pause 10ms:3:1h
python3 - hour.json <<'PY' || fail "a 1 h peer pause"
import json, math, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
assert t["rx_packets"] == t["tx_packets"] + sum(t["dropped"].values()) + t["queued_at_end"], t
refresh_ns = math.ceil(65535 * 512e9 / 10e9) // 2  # half the longest pause at 10G
frames = math.ceil(3600e9 / refresh_ns) + 1        # the refreshes, then XON
pfc = r["pfc"][0]
assert pfc["pause_frames_received"] == frames, (pfc["pause_frames_received"], frames)
assert pfc["storms"] >= 1, pfc
print(f"PASS: a 1 h peer pause: {frames} frames, a storm ended by the watchdog, "
      f"{t['dropped'].get('pfc_storm', 0)} packets dropped by its policy, all accounted for")
PY
if "$twinlane" replay -c "$policy" -i incast.pcap --port east --pfc-pause 10ms:3:2h >/dev/null \
    2>err.txt; then
    fail "a 2 h peer pause was accepted"
fi
grep -q "at most 1h" err.txt || fail "not explained: $(cat err.txt)"
echo "PASS: a peer pause beyond 1 h refused, explained"
