#!/usr/bin/env bash
# A latency SLO enforced by the realtime pipeline (`twinlane run -c`, net_pcap in and out at
# 1G, one lcore): an inference surge in the input pcap (twinlane gen --surge) misses the SLO,
# the controller raises the inference cap (logged with its reason by the monitor thread) and
# downgrades flows, and twinlanectl shows it while the daemon runs: stats classes' SLO table
# (cap changes, windows missed) and the JSON's slo entry (cap at most the max); Prometheus
# exposes twinlane_class_slo_*; every packet is accounted for at exit.
# Usage: slo_realtime_test.sh TWINLANE TWINLANECTL
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
twinlanectl=$(realpath "$2")
cd "$WORK"

"$twinlane" gen -o in.pcap --link-rate 1G --duration 20ms --training-load 0.5 \
    --inference-load 0.1 --other-load 0.02 --surge 25 --surge-start 5ms --surge-end 15ms \
    --seed 3 >/dev/null
metrics_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >policy.yaml <<YAML
version: 1
ports:
  - {name: in, device: "net_pcap0,rx_pcap=$WORK/in.pcap", rate: 1G, mtu: 9000, tx_budget: 20000}
  - {name: out, device: "net_pcap1,tx_pcap=$WORK/out.pcap", rate: 1G, mtu: 9000, tx_budget: 20000}
forwarding:
  - {from: in, to: out}
lcores: {single: 0}
classes:
  - name: inference
    slo: {p99: 50us, window: 1ms, adapt_cap: {min: 30%, max: 90%}, downgrade: {to: other}}
  - training
  - other
scheduler:
  name: root
  kind: strict
  children:
    - {name: inference, kind: fifo, class: inference, shaper: {rate: 30%, burst: 16KB}}
    - name: bulk
      kind: drr
      children:
        - {name: training, kind: fq, class: training, weight: 19}
        - {name: other, kind: fifo, class: other, weight: 1}
classifier:
  heuristics:
    roce: training
    serving: {ports: [8000-8001, 8080, 50051], class: inference}
    default_class: other
control: {socket: $WORK/twinlane.sock}
metrics: {enabled: true, port: $metrics_port}
YAML
"$twinlane" check -c policy.yaml >/dev/null || fail "policy: $("$twinlane" check -c policy.yaml 2>&1)"

start_daemon "$twinlane" --json --idle-exit never -c policy.yaml -- "${EAL_BASE[@]}" -l 0 \
    --file-prefix "tl-slo-$$"
ctl() { timeout 60 "$twinlanectl" -s "$WORK/twinlane.sock" --timeout 30s "$@"; }
# The input is read at once; wait until the SLO has been judged and acted on.
for _ in $(seq 100); do
    ctl -j stats classes >classes.json 2>/dev/null &&
        python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))[0]["slo"][0]
sys.exit(0 if s["cap_changes"] >= 1 and s["windows_missed"] >= 1 else 1)' classes.json && break
    sleep 0.1
done
ctl stats classes >classes.txt || fail "stats classes failed"
grep -q "^SLO CLASS" classes.txt || fail "no SLO table: $(cat classes.txt)"
python3 - classes.json <<'PY' || fail "stats classes' slo: $(cat classes.json)"
import json, sys
inference = json.load(open(sys.argv[1]))[0]
assert inference["name"] == "inference", inference["name"]
slo = inference["slo"][0]
assert slo["port"] == "out", slo
assert slo["objective"]["percentile"] == "p99" and slo["objective"]["target_ns"] == 50000, slo
assert slo["objective"]["actions"] == ["adapt_cap", "downgrade"], slo
assert slo["cap_changes"] >= 1 and slo["windows_missed"] >= 1, slo
assert 300_000_000 <= slo["cap_bits_per_sec"] <= 900_000_000, slo
assert slo["cap_floor_bits_per_sec"] == 0 or \
    300_000_000 <= slo["cap_floor_bits_per_sec"] < slo["cap_bits_per_sec"], slo
assert slo["downgrades"] >= 1 and slo["downgraded_bytes"] > 0, slo
print(f"inference SLO: {slo['windows_missed']} windows missed, cap changed {slo['cap_changes']}x,"
      f" {slo['downgrades']} flows downgraded")
PY
python3 - "$metrics_port" <<'PY' || fail "metrics"
import re, sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=30).read().decode()
for family in ("twinlane_class_slo_windows_total", "twinlane_class_slo_cap_bits_per_second",
               "twinlane_class_slo_cap_floor_bits_per_second",
               "twinlane_class_slo_target_seconds", "twinlane_class_slo_downgraded_bytes_total"):
    assert f"# TYPE {family} " in text, family
m = re.search(r'^twinlane_class_slo_cap_changes_total\{class="inference",port="out"\} (\d+)$',
              text, re.M)
assert m and int(m.group(1)) >= 1, "cap changes"
assert re.search(r'^twinlane_class_slo_target_seconds\{class="inference",port="out",'
                 r'percentile="p99"\} 0\.00005$', text, re.M), "target"
PY
kill -TERM "$daemon"
rc=0
wait "$daemon" || rc=$?
daemon=""
[ "$rc" -eq 0 ] || fail "daemon exited $rc: $(tail -20 daemon.log)"
grep -Eq "slo: port 'out': inference: cap 300.0M -> [0-9.]+M \(queueing delay .* > 25.0us, half the p99 target 50.0us\)" daemon.log ||
    fail "no logged cap change with its reason: $(grep slo: daemon.log | head)"
grep -q "slo: port 'out': inference: SLO missed: window p99" daemon.log || fail "no logged miss"
grep -q "downgraded [0-9]* flow(s)" daemon.log || fail "no logged downgrade"
python3 - report.json <<'PY' || fail "accounting: $(cat report.json)"
import json, sys
r = json.load(open(sys.argv[1]))
dropped = sum(r["dropped"].values())
assert r["rx_packets"] == r["tx_packets"] + dropped + r["queued"], r
PY
echo "PASS: surge -> logged cap change and downgrades, visible through twinlanectl and /metrics"
