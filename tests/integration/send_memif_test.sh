#!/usr/bin/env bash
# `twinlane send` feeding `twinlane run` over a memif pair (two processes, shared memory): a
# generated 20 ms trace with jumbo frames, sent at its recorded timing serialised at 10G, is
# received whole by the pipeline (run to completion on lcore 1, the sender on lcore 0), and
# every frame is accounted for on both sides; the sender takes the trace's time, not less.
# Bad input: a missing capture and a bad --link-rate (also 0 or empty, which are no limit's
# look-alikes) end with an error naming them.
# Usage: send_memif_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
cd "$WORK"
# memif needs EAL's multi-process channel (no --no-shconf): own runtime directories, removed.
prefix="tlsend$$"
trap 'kill "$sender" 2>/dev/null || true; rm -rf "$WORK" /var/run/dpdk/"$prefix"-*' EXIT
eal=(--no-huge --no-pci -m 512 --log-level=error)
memif="socket=$WORK/memif.sock,socket-abstract=no,bsize=16384"

"$twinlane" --log-level warn gen -o in.pcap --link-rate 1G --duration 20ms >/dev/null
frames=$(tcpdump -r in.pcap -nn 2>/dev/null | wc -l)
[ "$frames" -gt 100 ] || fail "generated trace has $frames frames"

cat >policy.yaml <<YAML
version: 1
ports:
  - {name: in, device: "net_memif0,role=client,$memif", rate: 10G, mtu: 9000}
  - {name: out, device: "net_pcap1,tx_pcap=out.pcap", rate: 10G, mtu: 9000}
forwarding: [{from: in, to: out}]
lcores: {single: 1}
classes: [inference, training, other]
scheduler:
  name: root
  kind: strict
  children:
    - {name: inference, kind: fq, class: inference}
    - {name: bulk, kind: fifo, class: training}
    - {name: rest, kind: fifo, class: other}
classifier:
  heuristics: {roce: training, serving: {ports: [50051], class: inference}, default_class: other}
metrics: {enabled: false}
YAML

"$twinlane" send --json --link-rate 10G --pcap in.pcap -- "${eal[@]}" --file-prefix "$prefix-s" \
    -l 0 --vdev="net_memif0,role=server,$memif" >send.json 2>send.err &
sender=$!
for _ in $(seq 300); do
    grep -q "waiting for its link" send.err && break
    kill -0 "$sender" 2>/dev/null || fail "sender exited: $(cat send.err)"
    sleep 0.1
done
grep -q "waiting for its link" send.err || fail "sender did not start: $(cat send.err)"
timeout 60 "$twinlane" --log-level warn run --json --no-control --idle-exit 1000 -c policy.yaml \
    -- "${eal[@]}" --file-prefix "$prefix-r" -l 1 >run.json 2>run.err ||
    fail "twinlane run: $(cat run.err)"
wait "$sender" || fail "twinlane send exited non-zero: $(cat send.err)"
sender=""
python3 - send.json run.json "$frames" <<'PY' || fail "accounting (send.json, run.json above)"
import json, sys
s, r, frames = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
print(f"sent {s['sent_packets']} frames, {s['sent_bytes']} bytes in {s['sent_s']:.4f} s "
      f"(trace {s['trace_s']:.4f} s), late p99 {s['lateness_us']['p99']:.1f} us; "
      f"received {r['rx_packets']}, {r['rx_bytes']} bytes; tx {r['tx_packets']}")
assert s["frames"] == frames and s["sent_packets"] == frames, s
assert r["rx_packets"] == frames and r["rx_bytes"] == s["sent_bytes"], r
assert r["rx_packets"] == r["tx_packets"] + sum(r["dropped"].values()) + r["queued"], r
assert r["mbufs"]["in_use_start"] == r["mbufs"]["in_use_end"], r["mbufs"]
# Paced: the last frame left no earlier than the trace (and the 10G link) allowed after the
# first was due (sent_s counts from there, so a late start does not hide an early finish).
assert s["sent_s"] >= 0.99 * s["trace_s"], s
PY
out=$(tcpdump -r out.pcap -nn 2>/dev/null | wc -l)
[ "$out" -eq "$(json_field run.json tx_packets)" ] || fail "out.pcap has $out frames"

# Bad input, each named in the error; nothing is sent.
if "$twinlane" send --pcap missing.pcap -- "${eal[@]}" >/dev/null 2>err.txt; then
    fail "a missing capture was accepted"
fi
grep -q "missing.pcap" err.txt || fail "missing capture not named: $(cat err.txt)"
if "$twinlane" send --link-rate fast --pcap in.pcap -- "${eal[@]}" >/dev/null 2>err.txt; then
    fail "--link-rate fast was accepted"
fi
grep -q -- "--link-rate fast" err.txt || fail "bad link rate not named: $(cat err.txt)"
# Stopped while it waits for a peer that never comes, it says so rather than "not up".
"$twinlane" send --link-wait 30000 --pcap in.pcap -- "${eal[@]}" --file-prefix "$prefix-w" \
    -l 0 --vdev="net_memif0,role=server,socket=$WORK/lonely.sock,socket-abstract=no" \
    >/dev/null 2>wait.err &
sender=$!
for _ in $(seq 300); do
    grep -q "waiting for its link" wait.err && break
    sleep 0.1
done
kill -TERM "$sender"
rc=0
wait "$sender" || rc=$?
sender=""
[ "$rc" -eq 2 ] && grep -q "stopped by a signal while waiting for its link" wait.err ||
    fail "SIGTERM while waiting for the link: exit $rc: $(cat wait.err)"
for rate in 0 ""; do
    if "$twinlane" send --link-rate "$rate" --pcap in.pcap -- "${eal[@]}" >/dev/null 2>err.txt; then
        fail "--link-rate '$rate' was accepted (as no link limit)"
    fi
    grep -q -- "--link-rate $rate" err.txt || fail "link rate '$rate' not named: $(cat err.txt)"
done
echo "PASS"
