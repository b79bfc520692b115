#!/usr/bin/env bash
# README command 1: set up, build, and run twinlane's main job on a built-in default,
# with no NIC and no hugepages (DPDK virtual devices backed by pcap files).
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
build=${BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release >/dev/null
ninja -C "$build" dataplane/twinlane >/dev/null

out=${OUT_DIR:-out/demo}
mkdir -p "$out"
python3 tests/integration/pcaptool.py gen "$out/in.pcap" --count 100000 --seed 1 --jumbo
echo "demo: forwarding $out/in.pcap through twinlane (FIFO slice) into $out/out.pcap"
"$build/dataplane/twinlane" --log-level warn run -- \
    --no-huge --no-pci --no-shconf -m 512 -l 0 --log-level=error \
    --vdev="net_pcap0,rx_pcap=$out/in.pcap" --vdev="net_pcap1,tx_pcap=$out/out.pcap"
python3 tests/integration/pcaptool.py compare "$out/in.pcap" "$out/out.pcap"
