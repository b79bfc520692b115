#!/usr/bin/env bash
# SIGTERM and SIGINT stop a run on endless input (net_null) cleanly: exit code 0, counters
# printed and balanced, no mbuf leak (the binary itself fails on either).
# Usage: stop_signal_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$1

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
