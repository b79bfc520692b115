#!/usr/bin/env bash
# `twinlane run --pace-input RATE`: a pcap input handed to the pipeline at its capture timing,
# as a wire would deliver it, rather than as fast as the lcore reads it. A generated 300 ms
# trace (1G loads) into 100G ports, run to completion: unpaced it is read and forwarded in a
# few milliseconds; paced it takes the trace's time, and so it does preloaded (the whole capture
# read into the pool before the run). Every frame is accounted for each way, the log reports
# the paced input, two preloaded captures keep their relative timing (one clock), a pause in
# the capture does not end the run, a jump of its clock beyond --pace-max-gap waits only that
# long (an hour's clock step, read during the run and preloaded), and a bad rate, a preload
# without a capture to read or an option of the other mode (-c or not) is refused, named.
# Usage: paced_input_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
cd "$WORK"
"$twinlane" --log-level warn gen -o in.pcap --link-rate 1G --duration 300ms >/dev/null
frames=$(tcpdump -r in.pcap -nn 2>/dev/null | wc -l)
[ "$frames" -gt 500 ] || fail "generated trace has $frames frames"

cat >policy.yaml <<YAML
version: 1
ports:
  - {name: in, device: "net_pcap0,rx_pcap=$WORK/in.pcap", rate: 100G, mtu: 9000}
  - {name: out, device: net_null1, rate: 100G, mtu: 9000}
forwarding: [{from: in, to: out}]
lcores: {single: 0}
classes: [inference, training, other]
scheduler:
  name: root
  kind: strict
  children:
    - {name: inference, kind: fq, class: inference}
    - {name: bulk, kind: fifo, class: training}
    - {name: rest, kind: fifo, class: other}
classifier:
  heuristics: {roce: training, serving: {ports: [50051, 8000-8001, 8080], class: inference},
               default_class: other}
metrics: {enabled: false}
YAML

run() {  # run NAME [run options]: NAME.json, NAME.err
    local name=$1
    shift
    timeout 60 "$twinlane" --log-level info run --json --no-control "$@" -c policy.yaml \
        -- "${EAL_BASE[@]}" -l 0 >"$name.json" 2>"$name.err" ||
        fail "twinlane run $*: $(tail -3 "$name.err")"
    python3 - "$name.json" "$frames" <<'PY' || fail "accounting of run $name"
import json, sys
r, frames = json.load(open(sys.argv[1])), int(sys.argv[2])
assert r["rx_packets"] == frames, (r["rx_packets"], frames)
assert r["rx_packets"] == r["tx_packets"] + sum(r["dropped"].values()) + r["queued"], r
assert r["mbufs"]["in_use_start"] == r["mbufs"]["in_use_end"], r["mbufs"]
PY
}

run fast
run paced --pace-input 10G
grep -q "paced input 'in'/0: $frames frames" paced.err || fail "no paced-input report: $(cat paced.err)"
python3 - fast.json paced.json <<'PY' || fail "the paced run did not take the trace's time"
import json, sys
fast, paced = (json.load(open(p))["elapsed_s"] for p in sys.argv[1:3])
print(f"elapsed (with the 200 ms idle exit): unpaced {fast:.3f} s, paced {paced:.3f} s")
assert paced >= 0.3 + 0.2 - 0.01, paced   # the trace's 300 ms, then idle until the exit
assert fast < paced - 0.1, (fast, paced)
PY
echo "PASS: $frames frames, paced over the trace's 300 ms, every one accounted for;" \
     "$(grep -o "paced input.*" paced.err)"

run preloaded --pace-input 10G --preload-input
grep -q "preloaded input 'in'/0: $frames frames" preloaded.err ||
    fail "no preload report: $(cat preloaded.err)"
grep -q "preloaded captures [1-9]" preloaded.err || fail "pool without the capture's share"
grep -q "paced input 'in'/0: $frames frames, 0 read after" preloaded.err ||
    fail "a preloaded frame was read late: $(grep "paced input" preloaded.err)"
python3 - preloaded.json <<'PY' || fail "the preloaded run did not take the trace's time"
import json, sys
elapsed = json.load(open(sys.argv[1]))["elapsed_s"]
print(f"elapsed preloaded {elapsed:.3f} s")
assert elapsed >= 0.3 + 0.2 - 0.01, elapsed
PY
echo "PASS: preloaded, $(grep -o "preloaded input.*" preloaded.err), paced over the trace's time"

# Two captures on one clock (taps on two links): the second is the trace 200 ms later. Preloaded,
# they share the clock, so the second ends 200 ms after the first; each from its own first
# frame, both would end together.
python3 - in.pcap later.pcap <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
magic = struct.unpack("<I", data[:4])[0]
per_second = 1_000_000_000 if magic == 0xA1B23C4D else 1_000_000
out, at = [data[:24]], 24
while at + 16 <= len(data):
    sec, frac, caplen, length = struct.unpack("<IIII", data[at:at + 16])
    t = sec * per_second + frac + per_second // 5
    out.append(struct.pack("<IIII", t // per_second, t % per_second, caplen, length))
    out.append(data[at + 16:at + 16 + caplen])
    at += 16 + caplen
open(sys.argv[2], "wb").write(b"".join(out))
PY
python3 - policy.yaml two-inputs.yaml "$WORK/later.pcap" <<'PY'
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
p["ports"].insert(1, {"name": "later", "device": f"net_pcap2,rx_pcap={sys.argv[3]}",
                      "rate": "100G", "mtu": 9000})
p["forwarding"].append({"from": "later", "to": "out"})
yaml.safe_dump(p, open(sys.argv[2], "w"), sort_keys=False)
PY
timeout 60 "$twinlane" --log-level info run --json --no-control --pace-input 10G --preload-input \
    -c two-inputs.yaml -- "${EAL_BASE[@]}" -l 0 >two.json 2>two.err ||
    fail "two preloaded inputs: $(tail -3 two.err)"
for port in in later; do
    grep -q "paced input '$port'/0: $frames frames, 0 read after" two.err ||
        fail "input '$port' not paced on time: $(grep "paced input" two.err)"
done
python3 - two.json "$frames" <<'PY' || fail "two preloaded inputs did not keep their timing"
import json, sys
r, frames = json.load(open(sys.argv[1])), int(sys.argv[2])
assert r["rx_packets"] == 2 * frames, (r["rx_packets"], frames)
assert r["rx_packets"] == r["tx_packets"] + sum(r["dropped"].values()) + r["queued"], r
print(f"elapsed, two captures 200 ms apart: {r['elapsed_s']:.3f} s")
assert r["elapsed_s"] >= 0.3 + 0.2 + 0.2 - 0.01, r["elapsed_s"]
PY
echo "PASS: two preloaded captures share one clock: the later one is handed over 200 ms later"

# A pause in the capture longer than the idle exit (200 ms) is not the end of the input: 40
# frames, a 500 ms pause, 40 more; paced, all arrive and the run lasts past the pause. Stopped
# during the pause (--duration), the frames still on the modelled link are reported, not lost.
python3 - in.pcap gap.pcap <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
magic = struct.unpack("<I", data[:4])[0]
per_second = 1_000_000_000 if magic == 0xA1B23C4D else 1_000_000
records, at = [], 24
while at + 16 <= len(data) and len(records) < 40:
    sec, frac, caplen, length = struct.unpack("<IIII", data[at:at + 16])
    records.append((sec * per_second + frac, data[at + 8:at + 16 + caplen]))
    at += 16 + caplen
out = [data[:24]]
for shift in (0, per_second // 2):
    for t, rest in records:
        t += shift
        out.append(struct.pack("<II", t // per_second, t % per_second) + rest)
open(sys.argv[2], "wb").write(b"".join(out))
PY
sed "s#rx_pcap=$WORK/in.pcap#rx_pcap=$WORK/gap.pcap#" policy.yaml >gap.yaml
timeout 60 "$twinlane" --log-level info run --json --no-control --pace-input 10G -c gap.yaml \
    -- "${EAL_BASE[@]}" -l 0 >gap.json 2>gap.err || fail "paced run with a pause: $(tail -3 gap.err)"
python3 - gap.json <<'PY' || fail "a pause in the paced capture ended the run: $(cat gap.err)"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"capture with a 500 ms pause: {r['rx_packets']} frames in {r['elapsed_s']:.3f} s")
assert r["rx_packets"] == 80, r["rx_packets"]
assert r["tx_packets"] + sum(r["dropped"].values()) + r["queued"] == 80, r
assert r["elapsed_s"] >= 0.5 + 0.2 - 0.01, r["elapsed_s"]
PY
grep -q "paced input 'in'/0: 80 frames, .*, 0 not yet arrived" gap.err ||
    fail "paced report: $(grep "paced input" gap.err)"
timeout 60 "$twinlane" --log-level info run --json --no-control --pace-input 10G --duration 0.25 \
    -c gap.yaml -- "${EAL_BASE[@]}" -l 0 >cut.json 2>cut.err || fail "cut run: $(tail -3 cut.err)"
python3 - cut.json <<'PY' || fail "stopped during the pause: $(cat cut.err)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["rx_packets"] == 40, r["rx_packets"]
assert r["tx_packets"] + sum(r["dropped"].values()) + r["queued"] == 40, r
assert r["mbufs"]["in_use_start"] == r["mbufs"]["in_use_end"], r["mbufs"]
PY
grep -q "paced input 'in'/0: 80 frames, .*, 40 not yet arrived when the run stopped" cut.err ||
    fail "frames on the modelled link at the stop not reported: $(grep "paced input" cut.err)"
echo "PASS: a 500 ms pause does not end a paced run; stopped in it, the 40 frames still due are" \
     "reported and freed"

# A jump of the capture's clock longer than --pace-max-gap (default 1 s) waits only that long:
# the 500 ms pause cut to 100 ms; a clock step of an hour cut to 1 s, read during the run and
# preloaded, where it would otherwise hold the frames after it for an hour. Counted in the log.
timeout 60 "$twinlane" --log-level info run --json --no-control --pace-input 10G \
    --pace-max-gap 100ms -c gap.yaml -- "${EAL_BASE[@]}" -l 0 >short.json 2>short.err ||
    fail "paced run with --pace-max-gap: $(tail -3 short.err)"
# (The jump is the pause less the first 40 frames' span: a little under 500 ms, so under 400 cut.)
grep -qE "paced input 'in'/0: 80 frames, .*, 0 not yet arrived .*, 1 jumps of its clock longer than --pace-max-gap cut to it \(0\.3[89][0-9] s taken out\)" short.err ||
    fail "the 500 ms pause not cut to 100 ms: $(grep "paced input" short.err)"
python3 - gap.pcap hour.pcap <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
out, at, n = [data[:24]], 24, 0
while at + 16 <= len(data):
    sec, frac, caplen, length = struct.unpack("<IIII", data[at:at + 16])
    out.append(struct.pack("<IIII", sec + (3600 if n >= 40 else 0), frac, caplen, length))
    out.append(data[at + 16:at + 16 + caplen])
    at, n = at + 16 + caplen, n + 1
open(sys.argv[2], "wb").write(b"".join(out))
PY
sed "s#rx_pcap=$WORK/gap.pcap#rx_pcap=$WORK/hour.pcap#" gap.yaml >hour.yaml
for mode in "" --preload-input; do
    timeout 60 "$twinlane" --log-level info run --json --no-control --pace-input 10G $mode \
        -c hour.yaml -- "${EAL_BASE[@]}" -l 0 >hour.json 2>hour.err ||
        fail "paced run ${mode:-read during the run} over a clock step of an hour: $(tail -3 hour.err)"
    python3 - hour.json <<'PY' || fail "clock step ${mode}: $(cat hour.err)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["rx_packets"] == 80 and r["tx_packets"] + sum(r["dropped"].values()) + r["queued"] == 80, r
PY
    grep -qE "1 jumps of its clock longer than --pace-max-gap cut to it \(3599\.[0-9]{3} s taken out\)" hour.err ||
        fail "the clock step ${mode} not cut to 1 s: $(grep "paced input" hour.err)"
done
if "$twinlane" run --pace-max-gap 1s -c policy.yaml -- "${EAL_BASE[@]}" -l 0 >/dev/null 2>err.txt; then
    fail "--pace-max-gap without --pace-input was accepted"
fi
grep -q -- "--pace-max-gap requires --pace-input" err.txt || fail "not named: $(cat err.txt)"
echo "PASS: jumps of the capture's clock beyond --pace-max-gap cut to it and counted (a 500 ms" \
     "pause to 100 ms; a clock step of an hour to 1 s, read during the run and preloaded)"

# A capture cut at a snap length (tcpdump -s 128): 1000 frames of 9000 bytes on their wire,
# stamped together, 128 bytes captured. Preloaded and paced at 1G they take their wire's time
# (72 us each, 72 ms in all), not their captured bytes' (1.2 ms); read during the run, the log
# says that their captured lengths are all the lcore can pace.
python3 - cut.pcap <<'PY'
import struct, sys
frame = bytearray(128)
frame[12:14] = b"\x08\x00"
frame[14:34] = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 9000 - 14, 1, 0, 64, 17, 0,
                           bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2]))
frame[34:42] = struct.pack("!HHHH", 40000, 5201, 9000 - 34, 0)
out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 128, 1)]
for _ in range(1000):
    out.append(struct.pack("<IIII", 1, 0, len(frame), 9000) + bytes(frame))
open(sys.argv[1], "wb").write(b"".join(out))
PY
sed "s#rx_pcap=$WORK/in.pcap#rx_pcap=$WORK/cut.pcap#" policy.yaml >cut.yaml
for mode in preloaded read; do
    extra=()
    [ "$mode" = preloaded ] && extra=(--preload-input)
    timeout 60 "$twinlane" --log-level info run --json --no-control --pace-input 1G "${extra[@]}" \
        -c cut.yaml -- "${EAL_BASE[@]}" -l 0 >"cut-$mode.json" 2>"cut-$mode.err" ||
        fail "paced cut capture ($mode): $(tail -3 "cut-$mode.err")"
done
grep -q "its capture cut frames" cut-preloaded.err || fail "preloaded: $(cat cut-preloaded.err)"
grep -q "cuts frames (a snap length)" cut-read.err || fail "read: no warning: $(cat cut-read.err)"
python3 - cut-preloaded.json cut-read.json <<'PY' || fail "a cut capture not paced at its wire lengths"
import json, sys
preloaded, read = (json.load(open(p)) for p in sys.argv[1:3])
for r in (preloaded, read):
    assert r["rx_packets"] == 1000, r["rx_packets"]
    assert r["rx_packets"] == r["tx_packets"] + sum(r["dropped"].values()) + r["queued"], r
print(f"cut at 128 bytes, paced at 1G: preloaded {preloaded['elapsed_s']:.3f} s, "
      f"read during the run {read['elapsed_s']:.3f} s (each with the 200 ms idle exit)")
assert preloaded["elapsed_s"] >= 0.072 + 0.2 - 0.005, preloaded["elapsed_s"]
assert read["elapsed_s"] < preloaded["elapsed_s"] - 0.03, (read["elapsed_s"], preloaded["elapsed_s"])
PY
echo "PASS: a capture cut at a snap length is paced preloaded at its wire lengths; read during" \
     "the run, the log says it cannot be"

if "$twinlane" run --preload-input -c policy.yaml -- "${EAL_BASE[@]}" -l 0 >/dev/null 2>err.txt; then
    fail "--preload-input without --pace-input was accepted"
fi
grep -q -- "--preload-input requires --pace-input" err.txt || fail "not explained: $(cat err.txt)"
sed 's#net_pcap0,rx_pcap=[^"]*#net_null0#' policy.yaml >null-input.yaml
if "$twinlane" run --pace-input 10G --preload-input -c null-input.yaml -- "${EAL_BASE[@]}" -l 0 \
    >/dev/null 2>err.txt; then
    fail "a preload of a device without a capture was accepted"
fi
grep -q "port 'in' (net_null0) does not read a capture file" err.txt ||
    fail "the port is not named: $(cat err.txt)"
echo "PASS: --preload-input refused without --pace-input and for a device that reads no capture"

for bad in fast 0; do
    if "$twinlane" run --pace-input "$bad" -c policy.yaml -- "${EAL_BASE[@]}" -l 0 >/dev/null \
        2>err.txt; then
        fail "--pace-input $bad was accepted"
    fi
    grep -q -- "--pace-input $bad" err.txt || fail "--pace-input $bad not named: $(cat err.txt)"
done
if "$twinlane" run --pace-input "" -c policy.yaml -- "${EAL_BASE[@]}" -l 0 >/dev/null 2>err.txt; then
    fail "an empty --pace-input was accepted"
fi
echo "PASS: bad --pace-input rates refused, named"

# An option of the other mode is refused, named, rather than ignored.
if "$twinlane" run --pace-input 10G -- "${EAL_BASE[@]}" -l 0 --vdev=net_null0 --vdev=net_null1 \
    >/dev/null 2>err.txt; then
    fail "--pace-input without -c was accepted"
fi
grep -q -- "--pace-input applies to the policy pipeline" err.txt || fail "not named: $(cat err.txt)"
if "$twinlane" run --fifo-packets 64 -c policy.yaml -- "${EAL_BASE[@]}" -l 0 >/dev/null \
    2>err.txt; then
    fail "--fifo-packets with -c was accepted"
fi
grep -q -- "--fifo-packets applies to the FIFO slice" err.txt || fail "not named: $(cat err.txt)"
echo "PASS: a pipeline option without -c, and a FIFO-slice option with it, refused, named"
