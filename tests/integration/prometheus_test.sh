#!/usr/bin/env bash
# Debian's Prometheus scraping a running `twinlane run -c` (prometheus_policy.yaml: a looped
# pcap of every traffic kind, far above the egress rate, so drops, marks and CoDel all move),
# with deploy/prometheus's recording and alert rules loaded, 1 s scrapes, everything on
# loopback in a temp dir. Through Prometheus's HTTP API (prometheus_check.py):
#  - every series control/README.md documents is present, and every counter grows;
#  - every recording rule has a result, every rule is healthy, a refused policy load and SIGHUP
#    reload fire TwinlanePolicyReloadFailed, and a good SIGHUP reload clears it;
#  - every query of deploy/grafana/twinlane.json returns data.
# Usage: prometheus_test.sh TWINLANE TWINLANECTL PROMETHEUS SOURCE_ROOT
source "$(dirname "$0")/lib.sh"
twinlane=$(realpath "$1")
twinlanectl=$(realpath "$2")
prometheus=$3
src=$(realpath "$4")
here=$(cd "$(dirname "$0")" && pwd)
[ "$prometheus" != none ] || { echo "SKIP: no prometheus binary (apt-get install prometheus)"; exit 77; }
cd "$WORK"

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
metrics_port=$(free_port)
prom_port=$(free_port)
prom_url="http://127.0.0.1:$prom_port"

python3 "$here/metrics_mix.py" mix.pcap >/dev/null
sed -e "s#WORK#$WORK#g" "$here/prometheus_policy.yaml" >policy.yaml
"$twinlane" check -c policy.yaml >/dev/null || fail "test policy does not check"

prom=""
cleanup() {
    if [ -n "$prom" ]; then kill "$prom" 2>/dev/null || true; wait "$prom" 2>/dev/null || true; fi
    daemon_cleanup
}
start_daemon "$twinlane" --json --idle-exit never --metrics-port "$metrics_port" -c policy.yaml -- \
    "${EAL_BASE[@]}" --lcores '0@(0-1),1@(0-1)' --file-prefix "tl-prom-$$"
trap cleanup EXIT

cat >prometheus.yml <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $src/deploy/prometheus/twinlane.rules.yml
  - $src/deploy/prometheus/twinlane.alerts.yml
scrape_configs:
  - job_name: twinlane
    static_configs:
      - targets: ['127.0.0.1:$metrics_port']
YAML
"$prometheus" --config.file=prometheus.yml --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >prometheus.log 2>&1 &
prom=$!
timeout 40 python3 "$here/prometheus_check.py" wait "$prom_url" ||
    fail "prometheus: $(tail -5 prometheus.log) daemon: $(tail -5 daemon.log)"

since=$(date +%s.%N)
sleep 1.5  # counters move under traffic between $since and the checks
ctl() { timeout 30 "$twinlanectl" -s "$WORK/twinlane.sock" --timeout 20s "$@"; }
# The change counters and the reload alert: one applied class change, one refused load, one
# refused SIGHUP reload of the policy file (the alert has no `for`, so it fires at the next
# evaluation); later a good reload clears it.
ctl class set training weight 5 >/dev/null || fail "class set refused"
printf 'version: 1\nports: []\n' >broken.yaml
rc=0
ctl policy load "$WORK/broken.yaml" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "loading a broken policy exited $rc, expected 1 (refused)"
cp policy.yaml good.yaml
cp broken.yaml policy.yaml
kill -HUP "$daemon"
sleep 3
timeout 60 python3 "$here/prometheus_check.py" check "$prom_url" --since "$since" \
    --readme "$src/control/README.md" --rules "$src/deploy/prometheus/twinlane.rules.yml" \
    --alerts "$src/deploy/prometheus/twinlane.alerts.yml" \
    --dashboard "$src/deploy/grafana/twinlane.json" || fail "prometheus checks (above)"
cp good.yaml policy.yaml
kill -HUP "$daemon"
sleep 2
last=$(python3 - "$prom_url" <<'PY'
import json, sys, urllib.request
url = sys.argv[1] + "/api/v1/query?query=twinlane_policy_last_load_successful"
print(json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"][0]["value"][1])
PY
)
[ "$last" = 1 ] || fail "twinlane_policy_last_load_successful is $last after a good reload"

kill -TERM "$daemon"
rc=0
wait "$daemon" || rc=$?
daemon=""
[ "$rc" -eq 0 ] || fail "daemon exited $rc: $(tail -20 daemon.log)"
echo "PASS: Prometheus scraped every documented series (counters growing), evaluated every" \
     "rule, fired the reload alert on refused loads and cleared it, answered every dashboard query"
