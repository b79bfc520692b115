#!/usr/bin/env bash
# A port name that does not exist gives a clear error naming it, and a non-zero exit code; so
# do a pcap input whose capture is not Ethernet (a pcapng one that turns non-Ethernet is said
# before the run), more RX queues than a device has, a looped (net_pcap infinite_rx) capture with
# frames above one mbuf, flow tables beyond memory, and bad option values (--idle-exit, replay
# --link-rate, an unknown option before --), an unwritable gen output.
# Usage: bad_port_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$1

rc=0
"$twinlane" run --in net_nosuch0 -- "${EAL_BASE[@]}" -l 0 --vdev=net_null0 --vdev=net_null1 \
    >"$WORK/out.txt" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "exit code 0 for a missing port"
grep -q "no DPDK port named 'net_nosuch0'" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "error does not name the port"; }
echo "PASS: missing port reported: $(grep -o "no DPDK port named[^(]*" "$WORK/out.txt")"

# A capture that is not Ethernet (tcpdump -i any writes Linux cooked, SLL2) on a pcap input is
# refused, naming the port, the file and its link type, instead of classified as garbage.
python3 - "$WORK/cooked.pcap" <<'PY'
import struct, sys
sll2 = struct.pack("!HHIHBB8s", 0x0800, 0, 2, 1, 0, 6, bytes(8))
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 0, 0, 64, 17, 0, bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2]))
frame = sll2 + ip + struct.pack("!HHHH", 1, 2, 8, 0)
with open(sys.argv[1], "wb") as out:
    out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 276))
    out.write(struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame)
PY
cat >"$WORK/cooked.yaml" <<YAML
version: 1
ports:
  - {name: capture, device: "net_pcap0,rx_pcap=$WORK/cooked.pcap", rate: 1G}
  - {name: out, device: "net_pcap1,tx_pcap=$WORK/out.pcap", rate: 1G}
forwarding:
  - {from: capture, to: out}
lcores: {single: 0}
classes: [other]
scheduler: {name: root, kind: fifo, class: other}
classifier: {heuristics: {default_class: other}}
metrics: {enabled: false}
YAML
rc=0
"$twinlane" run -c "$WORK/cooked.yaml" --no-control -- "${EAL_BASE[@]}" -l 0 >"$WORK/cooked.txt" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "exit code 0 for a Linux cooked capture on a pcap input"
grep -q "port 'capture': rx_pcap '.*cooked.pcap' has link type LINUX_SLL2 (276)" "$WORK/cooked.txt" ||
    { cat "$WORK/cooked.txt"; fail "error does not name the port, file and link type"; }
echo "PASS: non-Ethernet pcap input refused: $(grep -o "has link type [^;]*" "$WORK/cooked.txt")"

# A pcapng capture whose second interface is not Ethernet: libpcap cannot read its records and
# the PMD skips them (rx_errors); the run says so before it starts, and receives the others.
python3 - "$WORK/mixed.pcapng" <<'PY'
import struct, sys
def block(kind, body):
    body += bytes(-len(body) % 4)
    n = 12 + len(body)
    return struct.pack("<II", kind, n) + body + struct.pack("<I", n)
eth = bytes(12) + b"\x08\x00" + struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 0, 0, 64, 17, 0,
                                            bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2]))
eth += struct.pack("!HHHH", 1, 2, 8, 0)
def packet(interface, frame):
    return block(6, struct.pack("<IIIII", interface, 0, 1000, len(frame), len(frame)) + frame)
out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
out += block(1, struct.pack("<HHI", 1, 0, 65535))        # Ethernet
out += packet(0, eth) * 3
out += block(1, struct.pack("<HHI", 276, 0, 65535))      # Linux cooked (SLL2)
out += packet(1, bytes(20) + eth[14:]) + packet(0, eth)
open(sys.argv[1], "wb").write(out)
PY
sed -e "s|cooked.pcap|mixed.pcapng|" "$WORK/cooked.yaml" >"$WORK/mixed.yaml"
timeout 60 "$twinlane" run -c "$WORK/mixed.yaml" --no-control --json -- "${EAL_BASE[@]}" -l 0 \
    >"$WORK/mixed.json" 2>"$WORK/mixed.txt" || { cat "$WORK/mixed.txt"; fail "mixed pcapng run"; }
grep -q "port 'capture': rx_pcap '.*mixed.pcapng': libpcap cannot read the record after frame 3" \
    "$WORK/mixed.txt" || { cat "$WORK/mixed.txt"; fail "a record libpcap cannot read is not said"; }
python3 - "$WORK/mixed.json" <<'PY' || fail "mixed: $(cat "$WORK/mixed.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["rx_packets"] == 4 and r["ports"][0]["nic"]["rx_errors"] >= 1, r["ports"][0]
PY
echo "PASS: a record libpcap cannot read is said before the run: $(grep -o "libpcap cannot.*" "$WORK/mixed.txt")"

# A policy that `twinlane run` must refuse when it starts its ports: exit non-zero (no signal)
# with an error matching PATTERN. Usage: refused_at_start NAME POLICY PATTERN WHAT
refused_at_start() {
    local rc=0
    timeout 60 "$twinlane" run -c "$2" --no-control --duration 1 -- "${EAL_BASE[@]}" -l 0 \
        >"$WORK/$1.txt" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || { cat "$WORK/$1.txt"; fail "$4: exit code $rc"; }
    grep -q "$3" "$WORK/$1.txt" || { cat "$WORK/$1.txt"; fail "$4: the error does not say why"; }
}

# More RX queues than the device has (net_pcap: one per rx_pcap) is refused at start, naming
# the port and the setting; the lcore polled the missing queue and net_pcap crashed (SIGSEGV).
"$twinlane" gen -o "$WORK/eth.pcap" --duration 2ms >/dev/null
sed -e "s|cooked.pcap\", rate: 1G}|eth.pcap\", rate: 1G, rx_queues: 2}|" "$WORK/cooked.yaml" \
    >"$WORK/queues.yaml"
grep -q "rx_queues: 2" "$WORK/queues.yaml" || fail "queues.yaml: $(cat "$WORK/queues.yaml")"
refused_at_start queues "$WORK/queues.yaml" \
    "port 'capture' .* failed to start: rx_queues 2: the device has at most 1 RX queue" \
    "rx_queues 2 on one rx_pcap"
echo "PASS: more RX queues than the device has refused: $(grep -o "rx_queues 2: [^(]*" "$WORK/queues.txt")"

# net_pcap's infinite_rx loops single-mbuf frames only; a capture with jumbo frames (gen's
# training) is refused at start with the reason, not only DPDK's bare EINVAL.
sed -e "s|cooked.pcap\", rate: 1G}|eth.pcap,infinite_rx=1\", rate: 1G}|" "$WORK/cooked.yaml" \
    >"$WORK/loop.yaml"
grep -q "infinite_rx=1" "$WORK/loop.yaml" || fail "loop.yaml: $(cat "$WORK/loop.yaml")"
refused_at_start loop "$WORK/loop.yaml" \
    "port 'capture' .* failed to start: .*net_pcap loops only frames that fit one mbuf" \
    "infinite_rx over jumbo frames"
echo "PASS: infinite_rx over jumbo frames refused: $(grep -o "(with infinite_rx.*" "$WORK/loop.txt")"

# Flow tables larger than the machine's available memory (every RX lcore builds one, touched
# at start) are an error naming the setting, not an out-of-memory kill. 2^24 flows x 16 slots
# x 128 B is 32 GiB; skipped where that much is available.
available_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
if [ "${available_kib:-0}" -gt 0 ] && [ "$available_kib" -lt $((32 * 1024 * 1024)) ]; then
    cat >"$WORK/huge.yaml" <<YAML
version: 1
ports:
  - {name: a, device: net_null0, rate: 1G}
  - {name: b, device: net_null1, rate: 1G}
forwarding:
  - {from: a, to: b}
lcores: {single: 0}
classes: [other]
scheduler: {name: root, kind: fifo, class: other}
classifier:
  heuristics: {default_class: other}
  flow_table: {capacity: 16777216, slots_per_flow: 16}
metrics: {enabled: false}
YAML
    rc=0
    timeout 60 "$twinlane" run -c "$WORK/huge.yaml" --no-control --duration 1 -- \
        "${EAL_BASE[@]}" -l 0 >"$WORK/huge.txt" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] || fail "exit code 0 for flow tables larger than memory"
    grep -q "classifier.flow_table: 1 flow table(s) x 32768 MiB .* lower capacity or slots_per_flow" \
        "$WORK/huge.txt" || { cat "$WORK/huge.txt"; fail "error does not name the flow table setting"; }
    echo "PASS: flow tables beyond memory refused: $(grep -o "classifier.flow_table: [^,]*" "$WORK/huge.txt")"
    rc=0
    "$twinlane" replay -c "$WORK/huge.yaml" -i "$WORK/cooked.pcap" --bulk-class other \
        >"$WORK/huge_replay.txt" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] || fail "replay: exit code 0 for a flow table larger than memory"
    grep -q "classifier.flow_table: 1 flow table(s) x 32768 MiB" "$WORK/huge_replay.txt" ||
        { cat "$WORK/huge_replay.txt"; fail "replay: error does not name the flow table setting"; }
    echo "PASS: replay refuses it too"
else
    echo "skipped the flow-table memory check: ${available_kib:-unknown} KiB available"
fi

# Bad option values get a usage error naming the option, not a crash or a wrapped number.
for value in garbage 12abc -5 99999999999999999999999 9223372036855; do
    rc=0
    "$twinlane" run -c "$WORK/cooked.yaml" --no-control --idle-exit="$value" -- "${EAL_BASE[@]}" \
        -l 0 >"$WORK/idle.txt" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || { cat "$WORK/idle.txt"; fail "--idle-exit $value: exit $rc"; }
    grep -q -- "--idle-exit: '$value'" "$WORK/idle.txt" || { cat "$WORK/idle.txt"; fail "--idle-exit $value not named"; }
done
echo "PASS: bad --idle-exit values refused: $(head -1 "$WORK/idle.txt")"

# An unknown option with a value before `--` is named; the EAL arguments after `--` are not
# blamed for it (they were, once the value had been taken as the first EAL argument).
rc=0
"$twinlane" run -c "$WORK/cooked.yaml" --report-json out.json -- "${EAL_BASE[@]}" -l 0 \
    >"$WORK/unknown.txt" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || { cat "$WORK/unknown.txt"; fail "unknown option: exit $rc"; }
grep -q "not expected: .*--report-json" "$WORK/unknown.txt" && ! grep -q -- "--no-pci" "$WORK/unknown.txt" ||
    { cat "$WORK/unknown.txt"; fail "the unknown option is not the one named"; }
rc=0
"$twinlane" check "$WORK/cooked.yaml" -- -l 0 >"$WORK/unknown.txt" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && grep -q "after -- are DPDK EAL arguments" "$WORK/unknown.txt" ||
    { cat "$WORK/unknown.txt"; fail "check took EAL arguments (exit $rc)"; }
echo "PASS: an unknown option before -- is named: $(head -1 "$WORK/unknown.txt")"
conf=$(cd "$(dirname "$0")/../../conf" && pwd)
"$twinlane" gen -o "$WORK/small.pcap" --duration 2ms >/dev/null 2>&1 || fail "gen"
for value in 0 0G 11T; do
    rc=0
    "$twinlane" replay -c "$conf/default.yaml" -i "$WORK/small.pcap" --link-rate "$value" \
        >"$WORK/rate.txt" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || { cat "$WORK/rate.txt"; fail "--link-rate $value: exit $rc"; }
    grep -q "\-\-link-rate: '$value' is not a link rate" "$WORK/rate.txt" ||
        { cat "$WORK/rate.txt"; fail "--link-rate $value not named"; }
done
echo "PASS: replay --link-rate 0 and above 10T refused"

# An output that cannot be written is said, not only an exit code (CLI11 prints nothing for it).
rc=0
"$twinlane" gen -o "$WORK/missing/x.pcap" --duration 2ms >"$WORK/gen.txt" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && grep -q "gen: cannot write pcap '$WORK/missing/x.pcap'" "$WORK/gen.txt" ||
    { cat "$WORK/gen.txt"; fail "gen into a missing directory: exit $rc, reason not said"; }
echo "PASS: gen says why it cannot write: $(head -1 "$WORK/gen.txt")"

# Queues that could hold more mbufs than any pool (250 x 1M-packet leaves) are refused when the
# policy is read, at the port; a pool larger than EAL's memory is refused when it is created,
# with its size; nothing crashes.
cat >"$WORK/pool.yaml" <<YAML
version: 1
ports:
  - {name: a, device: "net_null0,size=64", rate: 10G}
  - {name: b, device: "net_null1,size=64", rate: 10G}
forwarding: [{from: a, to: b}, {from: b, to: a}]
lcores: {single: 0}
classes: [other, training]
scheduler:
  name: root
  kind: drr
  children:
    - {name: other, kind: fifo, class: other}
    - {name: jobs, kind: drr, class: training,
       per_job: {count: 250, leaf: {kind: fifo, limit: {packets: 1048576}}}}
classifier: {heuristics: {default_class: other}}
metrics: {enabled: false}
YAML
rc=0
"$twinlane" run -c "$WORK/pool.yaml" --no-control -- "${EAL_BASE[@]}" -l 0 >"$WORK/pool.txt" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || { cat "$WORK/pool.txt"; fail "queues beyond any pool: exit $rc"; }
grep -q "pool.yaml:3:5: ports\[0\]: this port can hold .* more than a pool's 16777216" "$WORK/pool.txt" ||
    { cat "$WORK/pool.txt"; fail "queues beyond any pool not named"; }
echo "PASS: queues beyond any pool refused at the port"
sed -i 's/per_job: {count: 250, leaf: {kind: fifo, limit: {packets: 1048576}}}/per_job: {count: 2, leaf: {kind: fifo}}/; s/rate: 10G}$/rate: 10G, mempool: 8000000}/' "$WORK/pool.yaml"
rc=0
"$twinlane" run -c "$WORK/pool.yaml" --no-control -- "${EAL_BASE[@]}" -l 0 >"$WORK/pool.txt" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || { cat "$WORK/pool.txt"; fail "pool beyond EAL memory: exit $rc"; }
grep -q "cannot create a pool of 16000[0-9]* mbufs (about [0-9]* MiB)" "$WORK/pool.txt" ||
    { cat "$WORK/pool.txt"; fail "pool beyond EAL memory not named"; }
echo "PASS: a pool beyond EAL's memory refused: $(grep -o "cannot create a pool[^:]*" "$WORK/pool.txt")"
# Without hugepages, virtual devices' pools are packed: 300,000 mbufs (about 680 MiB at their
# footprint, conf/mbuf_demand.h) fit in 1 GiB, where a page per mbuf (DPDK's layout for devices
# that may DMA) would need 1.2 GiB.
sed -i 's/, mempool: 8000000}$/, mempool: 150000}/' "$WORK/pool.yaml"
rc=0
"$twinlane" --log-level info run -c "$WORK/pool.yaml" --no-control --duration 0.2 \
    -- "${EAL_BASE[@]}" -l 0 >"$WORK/pool.txt" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/pool.txt"; fail "a pool that fits packed: exit $rc"; }
grep -q "mbuf pool twinlane_s0: 300[0-9]* mbufs .*, packed (no IOVA" "$WORK/pool.txt" ||
    { cat "$WORK/pool.txt"; fail "the pool of virtual devices not packed"; }
echo "PASS: without hugepages a pool of virtual devices is packed (300k mbufs in -m 1024)"
