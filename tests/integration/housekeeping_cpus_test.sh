#!/usr/bin/env bash
# The daemon's own threads (monitor, control and metrics servers, rate sampler, reloader) run on
# the CPUs no lcore uses (dataplane/housekeeping_cpus.h): a run to completion on lcore 0 of a
# machine with more CPUs keeps CPU 0 to its forwarding thread alone, and says where the others
# run. With a single CPU they share the main lcore's, as DPDK's own control threads do.
# Usage: housekeeping_cpus_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
cd "$WORK"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -e 's/DEVICE_ARGS//' -e 's/LCORES/{single: 0}/' -e '/^metrics:/,$d' \
    "$(dirname "$0")/realtime_null.yaml" >policy.yaml
cat >>policy.yaml <<YAML
control: {socket: $WORK/twinlane.sock}
metrics: {enabled: true, listen: 127.0.0.1, port: $port}
YAML
cpus=$(nproc)
"$twinlane" --log-level info run --json --duration 2 -c policy.yaml \
    -- "${EAL_BASE[@]}" -l 0 >report.json 2>run.log &
pid=$!
trap 'kill -KILL "$pid" 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do
    [ -S twinlane.sock ] && break
    kill -0 "$pid" 2>/dev/null || fail "run exited at start: $(cat run.log)"
    sleep 0.1
done
sleep 0.3  # the monitor and reloader start with forwarding, after the control socket
# Each thread's CPUs while forwarding: TID NAME CPUS.
for task in /proc/"$pid"/task/*; do
    echo "$(basename "$task") $(cat "$task/comm") $(awk '/Cpus_allowed_list/ {print $2}' "$task/status")"
done >threads.txt
wait "$pid" || fail "run failed: $(tail -3 run.log)"
cat threads.txt
grep -q "daemon threads on CPUs" run.log || fail "no log of the daemon threads' CPUs"
main_cpus=$(awk -v pid="$pid" '$1 == pid {print $3}' threads.txt)
[ "$main_cpus" = 0 ] || fail "the forwarding (main) thread runs on CPUs '$main_cpus', not 0"
others=$(awk -v pid="$pid" '$1 != pid' threads.txt | wc -l)
for name in tl-monitor tl-reload tl-control tl-metrics tl-rates; do
    grep -q " $name " threads.txt || fail "no thread named $name"
done
if [ "$cpus" -gt 1 ]; then
    grep -q "daemon threads on CPUs 1" run.log || fail "$(grep "daemon threads" run.log)"
    # No thread but the forwarding one may run on CPU 0.
    python3 - threads.txt "$pid" <<'PY' || fail "a daemon thread shares the lcore's CPU"
import sys
def cpus(text):
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out
for line in open(sys.argv[1]):
    tid, name, allowed = line.split()
    assert tid == sys.argv[2] or 0 not in cpus(allowed), line
PY
    echo "PASS: $others other threads off CPU 0 ($(grep -o "daemon threads on CPUs.*" run.log)), the forwarding lcore alone there"
else
    grep -q "daemon threads on CPUs 0" run.log || fail "$(grep "daemon threads" run.log)"
    echo "PASS: one CPU: the daemon threads share the main lcore's CPU 0"
fi
