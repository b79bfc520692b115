#!/usr/bin/env bash
# The realtime pipeline with hugepage-backed memory (the production setup): a bounded run on
# null devices, counters balance, no mbuf leak. Skipped (exit 77) where no hugepages are free.
# Usage: realtime_hugepages_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$1
here=$(cd "$(dirname "$0")" && pwd)

free_pages=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
if [ "${free_pages:-0}" -lt 256 ] || ! grep -q hugetlbfs /proc/mounts; then
    echo "SKIP: no hugepages (HugePages_Free=${free_pages:-0}, need 256 and a hugetlbfs mount)"
    exit 77
fi
sed -e "s/LCORES/{single: 0}/" -e "s/DEVICE_ARGS//" "$here/realtime_null.yaml" >"$WORK/policy.yaml"
timeout 30 "$twinlane" --log-level warn run --json --duration 1 -c "$WORK/policy.yaml" -- \
    --no-pci --no-shconf -m 512 --log-level=error -l 0 --file-prefix "tl$$" \
    >"$WORK/counters.json" || fail "hugepage run exited non-zero"
python3 - "$WORK/counters.json" <<'PY' || fail "counters do not balance: $(cat "$WORK/counters.json")"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["tx_packets"] > 0
assert c["rx_packets"] == c["tx_packets"] + sum(c["dropped"].values()) + c["queued"]
assert c["mbufs"]["in_use_start"] == c["mbufs"]["in_use_end"]
PY
echo "PASS: hugepage run: $(json_field "$WORK/counters.json" tx_packets) packets, counters balance"
