#!/usr/bin/env bash
# SIGTERM and SIGINT stop a run on endless input (net_null) cleanly: exit code 0, counters
# printed and balanced, no mbuf leak (the binary itself fails on either). Then SIGHUP and SIGTERM
# on a policy's run whose input is a FIFO that went quiet (net_pcap, the lcore blocked in its
# read): the SIGHUP reloads and the run goes on, the SIGTERM still stops it.
# Usage: stop_signal_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")

for sig in TERM INT; do
    "$twinlane" --log-level info run --json -- "${EAL_BASE[@]}" -l 0 \
        --vdev=net_null0 --vdev=net_null1 >"$WORK/counters.json" 2>"$WORK/log.txt" &
    pid=$!
    # Wait (bounded, 10 s) until the forwarder logs that it runs, then signal it.
    for _ in $(seq 100); do
        grep -q "forwarding" "$WORK/log.txt" && break
        sleep 0.1
    done
    grep -q "forwarding" "$WORK/log.txt" || fail "forwarder did not start: $(cat "$WORK/log.txt")"
    kill -"$sig" "$pid"
    rc=0
    timeout 10 tail --pid="$pid" -f /dev/null || fail "did not stop within 10 s of SIG$sig"
    wait "$pid" || rc=$?
    [ "$rc" -eq 0 ] || fail "exit code $rc after SIG$sig"
    python3 - "$WORK/counters.json" <<'PY' || fail "counters do not balance after SIG$sig"
import json, sys
c = json.load(open(sys.argv[1]))
dropped = sum(c["dropped"].values())
assert c["rx_packets"] > 0, c
assert c["rx_packets"] == c["tx_packets"] + dropped + c["queued"], c
PY
    echo "PASS: SIG$sig stopped the run with balanced counters"
done

# The quiet FIFO: the writer sends the pcap header and 3 frames, then holds the FIFO open.
# (lib.sh's start_daemon, and its cleanup that kills the writer and the daemon on any exit.)
cd "$WORK"
mkfifo in.fifo
python3 - in.fifo <<'PY' &
import struct, sys, time
with open(sys.argv[1], "wb", buffering=0) as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    frame = bytes(14) + bytes(50)
    for i in range(3):
        f.write(struct.pack("<IIII", 1, i, len(frame), len(frame)) + frame)
    time.sleep(30)
PY
stream_writer=$!
sed -e "s#WORK#$WORK#g" -e "s/METRICS/false/" "$INTEGRATION_DIR/hitless_a.yaml" >policy.yaml
start_daemon "$twinlane" --json --idle-exit never -c policy.yaml -- "${EAL_BASE[@]}" \
    --lcores '0@(0-1),1@(0-1)'
sleep 0.5
kill -HUP "$daemon"
sleep 0.5
kill -0 "$daemon" || fail "SIGHUP ended the run on a quiet FIFO"
kill -TERM "$daemon"
timeout 10 tail --pid="$daemon" -f /dev/null || fail "SIGTERM did not stop the run on a quiet FIFO within 10 s"
rc=0
wait "$daemon" || rc=$?
daemon=""
[ "$rc" -eq 0 ] || fail "exit code $rc after SIGTERM on a quiet FIFO: $(tail -5 daemon.log)"
grep -q "reloaded (SIGHUP)" daemon.log || fail "the SIGHUP was not applied: $(tail -5 daemon.log)"
python3 - report.json <<'PY' || fail "counters after SIGTERM on a quiet FIFO: $(cat report.json)"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["rx_packets"] == 3 and c["tx_packets"] == 3, c
PY
echo "PASS: on a quiet FIFO, SIGHUP kept the run and SIGTERM stopped it"
