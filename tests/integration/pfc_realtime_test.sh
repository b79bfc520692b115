#!/usr/bin/env bash
# Priority flow control on the realtime pipeline (`twinlane run`, pcap virtual devices, run to
# completion and across two lcores):
#   honoured  a PFC frame received on port `east` pausing priority 3 for 20000 quanta (102.4 ms at
#             its 100 Mbit/s) holds the lossless training class on east's egress for that long,
#             while inference keeps leaving: training is served first here (strict), yet every
#             inference packet leaves before it; the frame is consumed, never forwarded. (Output
#             pcap timestamps are the input's, carried in the mbufs: order, not time, is checked.)
#   generated training from `west` (DSCP 26 -> priority 3) into the 100 Mbit/s `east` crosses
#             xoff: twinlane writes an XOFF for priority 3 out of west (its ingress), ahead of
#             data, refreshes it while above xon, and an XON once east has drained it; nothing
#             lossless is dropped; the frames read back as Wireshark (tshark) decodes them
#   watchdog  with the default 50 ms storm detection, the same 102.4 ms pause is a storm: the
#             priority is released after 50 ms, its packets then dropped (pfc_storm), counted
#   two ports training from west and north into east: each ingress port's own bytes pause it,
#             so each writes its own XOFF ... XON; nothing lossless dropped
#   accounted rx = tx + dropped + queued, MAC control frames counted as consumed, no mbuf leak.
# Usage: pfc_realtime_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
cd "$WORK"

# west_in.pcap: 1500 training frames of 1000 B (UDP 4791, DSCP 26) and 150 inference frames
# (TCP 50051), interleaved; east_in.pcap: one PFC frame pausing priority 3 for 20000 quanta.
python3 - <<'PY'
import struct
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b)); s = (s & 0xFFFF) + (s >> 16)
    return ~((s & 0xFFFF) + (s >> 16)) & 0xFFFF
def ip_frame(proto, sport, dport, tos, size, seq):
    if proto == 6:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 0x50, 0x10, 65535, 0, 0)
    else:
        l4 = struct.pack("!HHHH", sport, dport, size - 34, 0) + bytes([4, 0, 0xFF, 0xFF]) + \
             struct.pack("!II", 7, seq)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, size - 14, 0, 0x4000, 64, proto, 0,
                     bytes([198, 18, 0, 1]), bytes([198, 19, 0, 1]))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    f = bytes([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0]) + ip + l4
    return f + bytes(size - len(f))
def write(name, frames):
    with open(name, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, f in enumerate(frames):
            out.write(struct.pack("<IIII", 0, i, len(f), len(f)) + f)
frames = []
for i in range(1500):
    frames.append(ip_frame(17, 49152, 4791, 26 << 2, 1000, i))
    if i % 10 == 0:
        frames.append(ip_frame(6, 40000, 50051, 0, 200, i // 10))
write("west_in.pcap", frames)
pfc = bytes([0x01, 0x80, 0xC2, 0, 0, 0x01, 2, 0, 0, 0, 0, 9, 0x88, 0x08, 0x01, 0x01, 0x00, 0x08])
pfc += bytes(6) + struct.pack("!H", 20000) + bytes(8)
write("east_in.pcap", [pfc + bytes(60 - len(pfc))])
PY

policy() {  # policy LCORES [WATCHDOG]
    cat >policy.yaml <<YAML
version: 1
ports:
  - name: west
    device: "net_pcap0,rx_pcap=west_in.pcap,tx_pcap=west_out.pcap"
    rate: 10G
    pfc: software
  - name: east
    device: "net_pcap1,rx_pcap=east_in.pcap,tx_pcap=east_out.pcap"
    rate: 100M
    tx_budget: 20000
    pfc: {mode: software, cable: 10m}
forwarding:
  - {from: west, to: east}
  - {from: east, to: west}
lcores: $1
classes:
  - inference
  - name: training
    lossless: {priority: 3, xoff: 200KB, xon: 100KB}
  - other
scheduler:
  name: root
  kind: strict
  children:
    - {name: training, kind: fifo, class: training, limit: {packets: 16384, bytes: 8MiB}}
    - {name: inference, kind: fifo, class: inference, limit: {packets: 4096, bytes: 4MiB}}
    - {name: other, kind: fifo, class: other}
classifier:
  heuristics:
    roce: training
    serving: {ports: [50051], class: inference}
    default_class: other
pfc:
  dscp_priority: {26: 3}
  watchdog: {storm_detect: ${2:-500ms}}
metrics: {enabled: false}
YAML
}

run() {  # run LCORES EAL_LCORES LABEL
    policy "$1"
    rm -f west_out.pcap east_out.pcap
    "$twinlane" check -c policy.yaml >check.txt || fail "$3: check refused the policy"
    # The pcap sender ignores PFC and outruns the 100M port: lane rings that hold the whole
    # input (1651 frames) keep a moment off-CPU of the scheduler lcore from dropping any at the
    # ring (lane_ring_full), which is not what this test is about.
    timeout 60 "$twinlane" --log-level warn run --json --no-control --lane-ring-slots 4096 \
        -c policy.yaml -- \
        "${EAL_BASE[@]}" -l "$2" >counters.json || fail "$3: run exited non-zero: $(cat counters.json)"
    python3 - counters.json east_out.pcap west_out.pcap "$3" <<'PY' || fail "$3"
import json, struct, sys
c = json.load(open(sys.argv[1]))
label = sys.argv[4]
def records(name):
    data = open(name, "rb").read()
    off, out = 24, []
    while off + 16 <= len(data):
        sec, usec, caplen, _ = struct.unpack_from("<IIII", data, off)
        out.append((sec + usec / 1e6, data[off + 16:off + 16 + caplen]))
        off += 16 + caplen
    return out
assert c["rx_packets"] == c["tx_packets"] + sum(c["dropped"].values()) + c["queued"], c
assert c["mbufs"]["in_use_start"] == c["mbufs"]["in_use_end"], c["mbufs"]
assert c["dropped"]["mac_control"] == 1, c["dropped"]          # the PFC frame east received
assert c["dropped"]["lossless_overflow"] == 0, c["dropped"]
lanes = {k["name"]: k for k in c["classes"]}
assert lanes["training"]["tx_packets"] == 1500 and lanes["training"]["dropped"] == 0, (c["dropped"], lanes)
assert lanes["inference"]["tx_packets"] == 150, lanes
east = [f for _, f in records(sys.argv[2])]
assert all(f[12:14] != b"\x88\x08" for f in east), "a MAC control frame was forwarded"
kinds = [f[23] for f in east]  # 17: training, 6: inference
first_training = kinds.index(17)
# Held for 20000 quanta at 100 Mbit/s = 102.4 ms from its arrival at start-up: long enough for
# all 150 inference packets (2.4 ms of the link) to leave before the first training one.
assert kinds[:first_training].count(6) == 150, f"training left after {first_training} packets"
pfc = [c2 for c2 in c["pfc"] if c2["port"] == "east" and c2["priority"] == 3][0]
# The hold ends at the lcore's first poll after it expires: late by as long as the lcore was
# off its CPU, which on a loaded 2-core machine (sanitizers, parallel tests) reaches ms.
assert pfc["rx_pause_frames"] == 1 and 100 <= pfc["rx_pause_ms"] <= 130, pfc
# West sent XOFF (priority 3, 0xFFFF quanta) when east's backlog passed 200 KB, XON at 100 KB.
west = [f for _, f in records(sys.argv[3]) if f[12:14] == b"\x88\x08"]
assert len(west) >= 2, f"{len(west)} PFC frames out of west"
vector = [struct.unpack_from("!H", f, 16)[0] for f in west]
quanta = [struct.unpack_from("!H", f, 18 + 2 * 3)[0] for f in west]
assert all(v == 0x08 for v in vector), vector
assert quanta[0] == 0xFFFF and quanta[-1] == 0, quanta
assert all(f[:6] == bytes([1, 0x80, 0xC2, 0, 0, 1]) and len(f) == 60 for f in west)
gen = [c2 for c2 in c["pfc"] if c2["port"] == "west" and c2["priority"] == 3][0]
assert gen["tx_pause_frames"] == len(west) and gen["tx_pause_ms"] > 0, gen
print(f"PASS: {label}: training held {pfc['rx_pause_ms']:.1f} ms with every inference packet "
      f"out first; west sent {len(west)} PFC frames (quanta {quanta[0]:#x} ... {quanta[-1]})")
PY
    # Wireshark's reading of the same bytes.
    tshark -r west_out.pcap -Y "macc.opcode == 0x0101" -T fields -e macc.cbfc.enbv \
        -e macc.cbfc.pause_time.c3 2>/dev/null >tshark.txt || fail "$3: tshark cannot read west_out.pcap"
    head -1 tshark.txt | grep -qiE '0x0*8[[:space:]]+65535' ||
        fail "$3: tshark reads the first PFC frame as '$(head -1 tshark.txt)'"
    tail -1 tshark.txt | grep -qiE '0x0*8[[:space:]]+0$' ||
        fail "$3: tshark reads the last PFC frame as '$(tail -1 tshark.txt)'"
    grep -q "headroom" check.txt || fail "$3: check printed no headroom"
}
run "{single: 1}" 1 "run to completion"
# East first: the pause must reach the scheduler lcore before west's first training packet does
# (both files are there at start-up). Polled after west, the frame raced the scheduler lcore,
# which could send a training packet from west's first burst before the frame was read.
run "{rx: [{lcore: 0, poll: [{port: east, queues: [0]}, {port: west, queues: [0]}]}], scheduler: [{lcore: 1, ports: [west, east]}]}" 0-1 "RX lcore and scheduler lcore"

# The watchdog: a 102.4 ms pause without a break is a storm at 50 ms.
policy "{single: 1}" 50ms
timeout 60 "$twinlane" --log-level warn run --json --no-control -c policy.yaml -- \
    "${EAL_BASE[@]}" -l 1 >storm.json || fail "storm: run exited non-zero"
python3 - storm.json <<'PY' || fail "watchdog"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["rx_packets"] == c["tx_packets"] + sum(c["dropped"].values()) + c["queued"], c
east = [e for e in c["pfc"] if e["port"] == "east" and e["priority"] == 3][0]
assert east["storms"] == 1, east
assert 40 < east["rx_pause_ms"] < 90, east          # held until the storm was declared
assert c["dropped"]["pfc_storm"] > 0, c["dropped"]  # then its packets are dropped
assert c["dropped"]["lossless_overflow"] == 0, c["dropped"]
print(f"PASS: watchdog: storm after {east['rx_pause_ms']:.1f} ms, "
      f"{c['dropped']['pfc_storm']} packets dropped as pfc_storm")
PY

# Two PFC ingress ports into east: west and north each send the same training (1.5 MB, past
# xoff on its own); each port's bytes are its own account, so each writes its own XOFF and,
# once east has drained it, XON, and nothing lossless is dropped. (north transmits, for its PFC
# frames, what south receives: nothing.)
python3 - <<'PY'
import struct
open("empty.pcap", "wb").write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
PY
cp west_in.pcap north_in.pcap
policy "{single: 1}"
python3 - <<'PY'
import yaml
p = yaml.safe_load(open("policy.yaml"))
p["ports"] += [{"name": "north", "device": "net_pcap2,rx_pcap=north_in.pcap,tx_pcap=north_out.pcap",
                "rate": "10G", "pfc": "software"},
               {"name": "south", "device": "net_pcap3,rx_pcap=empty.pcap,tx_pcap=south_out.pcap",
                "rate": "10G"}]
p["forwarding"] += [{"from": "north", "to": "east"}, {"from": "south", "to": "north"}]
yaml.safe_dump(p, open("policy.yaml", "w"), sort_keys=False)
PY
"$twinlane" check -c policy.yaml >check.txt || fail "two ingress ports: check refused the policy"
timeout 60 "$twinlane" --log-level warn run --json --no-control --lane-ring-slots 4096 \
    -c policy.yaml -- "${EAL_BASE[@]}" -l 1 >two.json || fail "two ingress ports: run exited non-zero"
python3 - two.json west_out.pcap north_out.pcap <<'PY' || fail "two ingress ports"
import json, struct, sys
c = json.load(open(sys.argv[1]))
assert c["rx_packets"] == c["tx_packets"] + sum(c["dropped"].values()) + c["queued"], c
assert c["mbufs"]["in_use_start"] == c["mbufs"]["in_use_end"], c["mbufs"]
assert c["dropped"]["lossless_overflow"] == 0, c["dropped"]
lanes = {k["name"]: k for k in c["classes"]}
assert lanes["training"]["tx_packets"] == 3000 and lanes["training"]["dropped"] == 0, lanes
sent = {}
for port, name in (("west", sys.argv[2]), ("north", sys.argv[3])):
    data, off, quanta = open(name, "rb").read(), 24, []
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        f = data[off + 16:off + 16 + caplen]
        if f[12:14] == b"\x88\x08":
            quanta.append(struct.unpack_from("!H", f, 18 + 2 * 3)[0])
        off += 16 + caplen
    assert len(quanta) >= 2 and quanta[0] == 0xFFFF and quanta[-1] == 0, (port, quanta)
    gen = [e for e in c["pfc"] if e["port"] == port and e["priority"] == 3][0]
    assert gen["tx_pause_frames"] == len(quanta), (port, gen)
    sent[port] = len(quanta)
print(f"PASS: two PFC ingress ports: each wrote its own XOFF ... XON (west {sent['west']}, "
      f"north {sent['north']} frames), 3000 training packets out, none dropped")
PY
