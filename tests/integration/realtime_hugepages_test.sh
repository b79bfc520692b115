#!/usr/bin/env bash
# The realtime pipeline with hugepage-backed memory (the production setup): a bounded run on
# null devices, counters balance, no mbuf leak, and no hugepage left held once it exits (EAL
# keeps its page files for secondary processes unless told --huge-unlink: without it each run
# of this test left 256 pages, 512 MiB, taken until someone deleted the files). Skipped (exit
# 77) where no hugepages can be had.
# Usage: realtime_hugepages_test.sh TWINLANE
source "$(dirname "$0")/lib.sh"
twinlane=$1
here=$(cd "$(dirname "$0")" && pwd)

# Where none are free and this runs as root (CI does), it reserves its own for the run: 256
# more 2 MiB pages and a private hugetlbfs mount in $WORK, both undone on exit.
need=256
free_pages() { awk '/^HugePages_Free:/ {print $2}' /proc/meminfo; }
huge_dir=$(awk '$3 == "hugetlbfs" {print $2; exit}' /proc/mounts)
nr=/proc/sys/vm/nr_hugepages
reserved_from=""
why="not root, so it cannot reserve any"
release() {
    if [ -n "$huge_dir" ]; then rm -f "$huge_dir/tl$$"map_*; fi
    if [ -n "$huge_dir" ] && [ "$huge_dir" = "$WORK/huge" ]; then umount "$huge_dir" || true; fi
    if [ -n "$reserved_from" ]; then echo "$reserved_from" >"$nr" || true; fi
    rm -rf "$WORK"
}
trap release EXIT
if [ "$(free_pages)" -lt "$need" ] || [ -z "$huge_dir" ]; then
    if [ "$(id -u)" = 0 ] && [ -w "$nr" ]; then
        why="this kernel or container refused to reserve them or to mount hugetlbfs"
        if [ "$(free_pages)" -lt "$need" ]; then
            reserved_from=$(cat "$nr")
            echo $((reserved_from + need - $(free_pages))) >"$nr" 2>/dev/null || true
        fi
        if [ -z "$huge_dir" ]; then
            mkdir "$WORK/huge"
            mount -t hugetlbfs -o pagesize=2M nodev "$WORK/huge" 2>/dev/null && huge_dir=$WORK/huge
        fi
    fi
fi
if [ "$(free_pages)" -lt "$need" ] || [ -z "$huge_dir" ]; then
    echo "SKIP: no hugepages (HugePages_Free=$(free_pages), need $need and a hugetlbfs mount;" \
         "$why)"
    exit 77
fi
echo "hugepages: $(free_pages) free 2 MiB pages, hugetlbfs at $huge_dir" \
     "$([ -n "$reserved_from" ] && echo "(reserved by this test)")"
sed -e "s/LCORES/{single: 0}/" -e "s/DEVICE_ARGS//" "$here/realtime_null.yaml" >"$WORK/policy.yaml"
timeout 30 "$twinlane" --log-level warn run --json --duration 1 -c "$WORK/policy.yaml" -- \
    --no-pci --no-shconf -m 512 --log-level=error -l 0 --huge-dir "$huge_dir" --huge-unlink \
    --file-prefix "tl$$" \
    >"$WORK/counters.json" || fail "hugepage run exited non-zero"
python3 - "$WORK/counters.json" <<'PY' || fail "counters do not balance: $(cat "$WORK/counters.json")"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["tx_packets"] > 0
assert c["rx_packets"] == c["tx_packets"] + sum(c["dropped"].values()) + c["queued"]
assert c["mbufs"]["in_use_start"] == c["mbufs"]["in_use_end"]
PY
left=$(find "$huge_dir" -maxdepth 1 -name "tl$$map_*" | wc -l)
[ "$left" = 0 ] || fail "$left hugepage files of the run left in $huge_dir"
echo "PASS: hugepage run: $(json_field "$WORK/counters.json" tx_packets) packets, counters balance"
