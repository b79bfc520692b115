#!/usr/bin/env bash
# Lossless training in virtual time (`twinlane replay`, conf/lossless.yaml): an 8:1 incast of
# RoCEv2 flows (8 jobs x 2 ranks, DSCP 26 -> priority 3) at 2x the 10G egress for 50 ms, with
# inference beside it:
#   - no training drop; pause frames sent; training leaves at the rate inference leaves it;
#     the senders' held packets are delayed, never lost (rx = tx + dropped + queued);
#   - inference p99 within 1% of the same run without lossless (training then tail-dropped);
#   - the egress peer pausing priority 3 for 2 ms at t = 10 ms holds training for 2 ms while
#     inference keeps leaving, and still nothing is dropped;
#   - the incast split over two PFC ingress ports (west and north, 1x the egress each): each
#     port pauses its own senders, by its own bytes; no training drop, nothing left held.
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

# The incast from two PFC ingress ports: west and another port, north, each offering training
# at the egress link's rate (north's flows moved to other source addresses).
"$twinlane" gen -o west.pcap --link-rate 10G --duration 50ms --training-load 1.0 \
    --inference-load 0.05 --other-load 0 --jobs 4 --flows-per-job 2 --roce-only --seed 3 >/dev/null
"$twinlane" gen -o north-src.pcap --link-rate 10G --duration 50ms --training-load 1.0 \
    --inference-load 0 --other-load 0 --jobs 4 --flows-per-job 2 --roce-only --seed 4 >/dev/null
python3 - "$policy" north-src.pcap north.pcap <<'PY'
import struct, sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
# north sends PFC frames, so it transmits too (from south); the training leaves hold xoff +
# headroom from two PFC ports.
p["ports"] += [{"name": "north", "device": "net_null2", "rate": "25G", "mtu": 9000,
                "pfc": {"mode": "software", "cable": "10m"}},
               {"name": "south", "device": "net_null3", "rate": "25G", "mtu": 9000}]
p["forwarding"] += [{"from": "north", "to": "east"}, {"from": "south", "to": "north"}]
training = p["scheduler"]["children"][1]["children"][0]
training["per_job"]["leaf"]["limit"] = {"packets": 16384, "bytes": "2MiB"}
yaml.safe_dump(p, open("two-pfc.yaml", "w"), sort_keys=False)
del p["ports"][2]["pfc"]
yaml.safe_dump(p, open("north-lossy.yaml", "w"), sort_keys=False)
data = bytearray(open(sys.argv[2], "rb").read())
off = 24
while off + 16 <= len(data):
    caplen = struct.unpack_from("<I", data, off + 8)[0]
    frame = off + 16
    if data[frame + 12:frame + 14] == b"\x08\x00":  # IPv4: source 198.18.x -> 198.19.x
        ip = frame + 14
        data[ip + 13] += 1
        data[ip + 10:ip + 12] = b"\0\0"
        words = sum(struct.unpack_from("!10H", data, ip))
        while words >> 16:
            words = (words & 0xFFFF) + (words >> 16)
        struct.pack_into("!H", data, ip + 10, ~words & 0xFFFF)
    off += 16 + caplen
open(sys.argv[3], "wb").write(data)
PY
for name in two-pfc north-lossy; do
    "$twinlane" --log-level warn replay -c "$name.yaml" -i west=west.pcap -i north=north.pcap \
        --port east --report "$name.json" >"$name.txt" || fail "$name: replay exited non-zero"
done
grep -q "priority 3 from 'north'" two-pfc.txt || fail "no per-port pfc line: $(cat two-pfc.txt)"
python3 - two-pfc.json north-lossy.json "$(python3 "$(dirname "$0")/pcaptool.py" count west.pcap)" \
    "$(python3 "$(dirname "$0")/pcaptool.py" count north.pcap)" <<'PY' || fail "PFC on two ports"
import json, sys
both, north_lossy = (json.load(open(f)) for f in sys.argv[1:3])
records = int(sys.argv[3]) + int(sys.argv[4])
for r in (both, north_lossy):
    t = r["totals"]
    assert t["rx_packets"] == records, (t["rx_packets"], records)
    assert t["rx_packets"] == t["tx_packets"] + sum(t["dropped"].values()) + t["queued_at_end"], t
training = both["classes"]["training"]
assert training["drops"] == 0, training["drops"]
pfc = both["pfc"][0]
ports = {s["port"]: s for s in pfc["ingress"]}
assert sorted(ports) == ["north", "west"], pfc["ingress"]
for name, s in ports.items():
    assert s["pause_frames_sent"] > 5 and s["packets_held"] > 0 and s["still_held"] == 0, (name, s)
for key in ("pause_frames_sent", "packets_held", "still_held"):
    assert pfc[key] == sum(s[key] for s in ports.values()), (key, pfc)
assert abs(pfc["sender_paused_ms"] - sum(s["sender_paused_ms"] for s in ports.values())) < 1e-6
b = training["backlogged"]
assert b["share_of_left_capacity"] > 0.99, b
# North without PFC: only west's senders are paused, and the lossless class's room is not
# protected from north's bytes: the incast is tail-dropped.
lossy = north_lossy["pfc"][0]
assert [s["port"] for s in lossy["ingress"]] == ["west"], lossy["ingress"]
assert north_lossy["classes"]["training"]["drops"] > 1000, north_lossy["classes"]["training"]
print(f"PASS: incast over two PFC ports: 0 training drops; pauses sent west "
      f"{ports['west']['pause_frames_sent']}, north {ports['north']['pause_frames_sent']}; "
      f"held west {ports['west']['packets_held']}, north {ports['north']['packets_held']} packets "
      f"(up to {ports['west']['max_sender_delay_us']:.0f} / "
      f"{ports['north']['max_sender_delay_us']:.0f} us); with PFC on west only "
      f"{north_lossy['classes']['training']['drops']} training drops")
PY
