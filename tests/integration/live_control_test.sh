#!/usr/bin/env bash
# The control surfaces of a running daemon (`twinlane run -c`, traffic from flow_stream.py):
#  - twinlanectl status (with each lcore's busy loop passes) / stats classes / stats ports / flows --top 5 / watch --count 2 print
#    live numbers (roles from the lcore plan, class counters that grow, the training flows),
#  - GET /metrics on 127.0.0.1 (--metrics-port) has twinlane_ class counters that grow with
#    traffic, and the port rates are non-zero,
#  - DPDK telemetry /twinlane/stats/classes and /twinlane/lcores answer on the EAL's telemetry
#    socket,
#  - `class set training limit_packets 1` with a thinner flow (the probe) in the training fq
#    leaf: the leaf pushes out its only packet for it, and the daemon keeps running (it died
#    of SIGSEGV about a second after the change),
#  - after SIGTERM the socket is gone and twinlanectl exits 3 saying the daemon is not running.
# Usage: live_control_test.sh TWINLANE TWINLANECTL
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
twinlanectl=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
cd "$WORK"

# Not running yet: exit 3 and a clear message.
rc=0
"$twinlanectl" -s "$WORK/twinlane.sock" status >none.txt 2>&1 || rc=$?
[ "$rc" -eq 3 ] || fail "twinlanectl without a daemon exited $rc: $(cat none.txt)"
grep -q "twinlane daemon not running at $WORK/twinlane.sock" none.txt ||
    fail "no clear message without a daemon: $(cat none.txt)"

sed -e "s#WORK#$WORK#g" -e "s/METRICS/true/" "$here/hitless_a.yaml" >policy.yaml
metrics_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
prefix="tl-live-$$"
EAL=("${EAL_BASE[@]}" --lcores '0@(0-1),1@(0-1)' --file-prefix "$prefix")

start_stream 200
start_daemon "$twinlane" --json --idle-exit never --lane-ring-slots 32768 --metrics-port "$metrics_port" \
    -c policy.yaml -- "${EAL[@]}"
ctl() { timeout 60 "$twinlanectl" -s "$WORK/twinlane.sock" --timeout 30s "$@"; }
sleep 1.5  # traffic through, and one rate sample

ctl status >status.txt || fail "status failed"
grep -q "policy policy.yaml (epoch 1), log level info" status.txt || fail "status: $(cat status.txt)"
grep -Eq "^0 +rx +in" status.txt && grep -Eq "^1 +scheduler +out" status.txt ||
    fail "status lacks the lcore roles: $(cat status.txt)"
grep -Eq "^out +1 .* up " status.txt || fail "status lacks port out, link up: $(cat status.txt)"
# Each lcore's loop: busy passes counted, their percentiles ordered, the longest poll gap; its
# thread's CPU time since the loop started, from /proc: run (a polling loop runs), waiting for
# the CPU and preemptions, none of it longer than the daemon has been up.
ctl -j status >status.json || fail "status --json failed"
python3 - status.json <<'PY' || fail "status lacks the lcores' loops: $(cat status.json)"
import json, sys
status = json.load(open(sys.argv[1]))
for l in status["lcores"]:
    assert l["busy_passes"] > 0, l
    assert 0 < l["pass_p50_ns"] <= l["pass_p99_ns"] <= l["pass_max_ns"], l
    assert 0 < l["poll_gap_max_ns"] < status["uptime_ns"], l
    assert 0 < l["run_ns"] and l["run_ns"] + l["runqueue_wait_ns"] <= status["uptime_ns"], l
    assert l["involuntary_switches"] >= 0, l
PY
grep -Eq "^0 +rx +in +[0-9]+ +[0-9.]+ / [0-9.]+ / [0-9.]+ +[0-9.]+ +[0-9.]+ ms / [0-9]+" status.txt ||
    fail "status table lacks the busy passes, poll gap and CPU taken: $(cat status.txt)"

ctl stats classes >classes1.txt || fail "stats classes failed"
ctl flows --top 5 >flows.txt || fail "flows failed"
[ "$(grep -c ':4791 ' flows.txt)" -eq 4 ] || fail "flows --top 5 lacks the 4 training flows: $(cat flows.txt)"
[ "$(wc -l <flows.txt)" -eq 6 ] || fail "flows --top 5 is not a header and 5 flows: $(cat flows.txt)"
ctl -j stats ports >ports.json || fail "stats ports failed"
ctl watch --interval 500ms --count 2 >watch.txt || fail "watch failed"
[ "$(grep -c '^CLASS' watch.txt)" -eq 2 ] || fail "watch --count 2 printed: $(cat watch.txt)"
grep -q "OUT RATE" watch.txt || fail "watch has no rate column: $(cat watch.txt)"
python3 - classes1.txt ports.json <<'PY' || fail "live counters: $(cat classes1.txt ports.json)"
import json, sys
rows = {l.split()[0]: l.split() for l in open(sys.argv[1]) if l.strip()}
for cls in ("inference", "training", "other"):
    assert int(rows[cls][1]) > 0, rows[cls]  # PKTS IN
ports = json.load(open(sys.argv[2]))
assert ports[0]["name"] == "in" and ports[0]["rx_packets"] > 0, ports
assert ports[1]["tx_packets"] > 0 and ports[1]["tx_bits_per_sec"] > 1_000_000, ports
PY

# Metrics twice, a second apart: the class counters grow.
python3 - "$metrics_port" <<'PY' || fail "metrics"
import re, sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/metrics"
def scrape():
    text = urllib.request.urlopen(url, timeout=30).read().decode()
    assert "# TYPE twinlane_class_classified_packets_total counter" in text, text[:500]
    assert re.search(r"^twinlane_up 1$", text, re.M), "twinlane_up"
    assert re.search(r"^twinlane_scrape_error\{[^}]*\} 0$", text, re.M), "scrape errors"
    assert not re.search(r"^twinlane_scrape_error\{[^}]*\} 1$", text, re.M), "scrape error 1"
    return {m[0]: int(m[1]) for m in re.findall(
        r'^twinlane_class_classified_packets_total\{class="(\w+)"\} (\d+)$', text, re.M)}
first = scrape()
time.sleep(1)
second = scrape()
assert set(first) == {"inference", "training", "other"}, first
for cls in first:
    assert second[cls] > first[cls] > 0, (cls, first, second)
print(f"metrics: training classified {first['training']} -> {second['training']}")
PY

# DPDK telemetry on this EAL's runtime directory.
python3 - "/var/run/dpdk/$prefix/dpdk_telemetry.v2" <<'PY' || fail "telemetry"
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(30)
s.connect(sys.argv[1])
s.recv(1024)  # greeting
s.send(b"/twinlane/stats/classes")
reply = json.loads(s.recv(65536))["/twinlane/stats/classes"]
assert reply["training"]["classified_packets"] > 0, reply
# Each forwarding lcore by its id: its passes and CPU numbers, as in status.
s.send(b"/twinlane/lcores")
lcores = json.loads(s.recv(65536))["/twinlane/lcores"]
assert {l["role"] for l in lcores.values()} >= {"rx", "scheduler"}, lcores
for lcore in lcores.values():
    assert lcore["busy_passes"] > 0 and lcore["run_ns"] > 0 and "runqueue_wait_ns" in lcore, lcore
PY

# The smallest packet limit `class set` accepts, on the fq leaf under the bulk drr. The probe's
# 128-byte frames are thinner than the training flows' 1000-byte ones, so a probe frame that
# finds the leaf full pushes out its one packet (fq_overflow) and takes its place. Inference
# capped below its offered rate keeps packets queued while the strict root skips it for the
# bulk lane, as the default policy's 50% cap does under load: the next pick() walked into the
# drr node whose ring the doubly linked leaf had corrupted.
ctl rules add "{name: probe, priority: 5, match: {proto: udp, dst_port: 7777}, action: {class: training}}" \
    >/dev/null || fail "rules add probe"
ctl class set inference rate 2M >/dev/null || fail "class set inference rate 2M"
ctl class set training limit_packets 1 >/dev/null || fail "class set training limit_packets 1"
# Until probe frames have pushed out a few packets (10 probe frames a second; how many find the
# leaf full depends on the lcores' timing): at most 20 s once the leaf has drained what it held
# under its old limit (up to 40000 packets, ~4 s at the port's 100M, far longer when a busy
# machine starves the lcores), and 120 s in all.
overflows=0
drained_at=""
for i in $(seq 240); do
    sleep 0.5
    if ! kill -0 "$daemon" 2>/dev/null; then
        rc=0
        wait "$daemon" || rc=$?
        daemon=""
        fail "daemon exited $rc after limit_packets 1: $(tail -5 daemon.log)"
    fi
    ctl -j stats classes >tiny.json || fail "stats classes after limit_packets 1"
    counts=$(python3 -c 'import json, sys
q = next(c for c in json.load(open(sys.argv[1])) if c["name"] == "training")["queue"]
print(q["drops"]["fq_overflow"], q["depth_packets"])' tiny.json) ||
        fail "training's queue is not in stats classes: $(cat tiny.json)"
    read -r overflows depth <<<"$counts"
    [ "$overflows" -ge 5 ] && break
    [ -z "$drained_at" ] && [ "$depth" -le 1 ] && drained_at=$i
    [ -n "$drained_at" ] && [ $((i - drained_at)) -ge 40 ] && break
done
if [ "$overflows" -lt 5 ]; then
    waited="20 s after the leaf drained"
    [ -n "$drained_at" ] || waited="120 s (the leaf never drained to 1 packet)"
    fail "no probe frame pushed out a training packet in $waited: $(cat tiny.json)"
fi
sleep 1  # the daemon died within a second of such a push-out
kill -0 "$daemon" 2>/dev/null || fail "daemon died after limit_packets 1: $(tail -5 daemon.log)"
echo "limit_packets 1: training fq_overflow $overflows, daemon running"

touch stop
wait "$stream_writer"
stream_writer=""
kill -TERM "$daemon"
rc=0
wait "$daemon" || rc=$?
daemon=""
[ "$rc" -eq 0 ] || fail "daemon exited $rc: $(tail -20 daemon.log)"
rc=0
"$twinlanectl" -s "$WORK/twinlane.sock" stats classes >gone.txt 2>&1 || rc=$?
[ "$rc" -eq 3 ] || fail "twinlanectl after the daemon stopped exited $rc: $(cat gone.txt)"
grep -q "twinlane daemon not running" gone.txt || fail "after stop: $(cat gone.txt)"
echo "PASS: status, stats, flows --top 5, watch --count 2, /metrics (class counters grow)," \
     "telemetry /twinlane/stats/classes and /twinlane/lcores, limit_packets 1 on an fq leaf" \
     "under drr, on a running daemon; exit 3 with no daemon"
