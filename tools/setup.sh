#!/usr/bin/env bash
# Installs, from Debian 12's archive only, exactly what twinlane's build, tests and tools need.
# Idempotent: installs only missing packages, so re-running is cheap and safe.
set -euo pipefail

PACKAGES=(
  # build
  build-essential meson ninja-build pkg-config clang clang-format lld llvm
  # libraries (found by meson through pkg-config)
  dpdk-dev libdpdk-dev libbpf-dev libxdp-dev libcli11-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev libyaml-cpp-dev nlohmann-json3-dev
  libpcap-dev libnuma-dev libelf-dev zlib1g-dev
  # runtime tools used by tests, benchmarks and the demo
  dpdk python3 python3-matplotlib iproute2 iperf3 sockperf tcpdump libclang-rt-14-dev
  # end-to-end test (tests/e2e): checksum offload off on the veths
  ethtool
  # PFC frames read back as Wireshark decodes them (tests/integration/pfc_realtime_test.sh)
  tshark
  # tools/bench_qos_sched.sh builds DPDK's qos_sched example from its sources in this package
  dpdk-doc
  # deployment kit (tests/deploy, tests/integration/prometheus_test.sh): Prometheus and
  # promtool, the Debian package build and lint, YAML parsing for the Kubernetes example
  prometheus debhelper dpkg-dev fakeroot lintian python3-yaml
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: need root to install: ${missing[*]}" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The prometheus package enables a server on :9090 (all interfaces); the tests start their own
# on loopback, so one this script installed is stopped and disabled again.
if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
  systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
echo "setup: done"
