#!/usr/bin/env bash
# A port name that does not exist gives a clear error naming it, and a non-zero exit code.
# Usage: bad_port_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$1

rc=0
"$twinlane" run --in net_nosuch0 -- "${EAL_BASE[@]}" -l 0 --vdev=net_null0 --vdev=net_null1 \
    >"$WORK/out.txt" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "exit code 0 for a missing port"
grep -q "no DPDK port named 'net_nosuch0'" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "error does not name the port"; }
echo "PASS: missing port reported: $(grep -o "no DPDK port named[^(]*" "$WORK/out.txt")"
