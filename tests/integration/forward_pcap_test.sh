#!/usr/bin/env bash
# The FIFO slice on pcap vdevs: the output holds the input's frames, same order, byte for byte,
# including jumbo frames, and the counters balance (rx = tx + dropped + queued).
# Usage: forward_pcap_test.sh TWINLANE PCAPTOOL
source "$(dirname "$0")/lib.sh"
twinlane=$1
pcaptool=$2

python3 "$pcaptool" gen "$WORK/in.pcap" --count 20000 --seed 7 --jumbo
"$twinlane" --log-level warn run --json -- "${EAL_BASE[@]}" -l 0 \
    --vdev="net_pcap0,rx_pcap=$WORK/in.pcap" --vdev="net_pcap1,tx_pcap=$WORK/out.pcap" \
    >"$WORK/counters.json"
python3 "$pcaptool" compare "$WORK/in.pcap" "$WORK/out.pcap" || fail "output differs from input"

rx=$(json_field "$WORK/counters.json" rx_packets)
tx=$(json_field "$WORK/counters.json" tx_packets)
[ "$rx" -eq 20000 ] || fail "rx_packets=$rx, expected 20000"
[ "$tx" -eq 20000 ] || fail "tx_packets=$tx, expected 20000"
echo "PASS: 20000 frames forwarded in order, byte for byte"
