# Shared helpers for integration tests of the real binary (sourced, not run).
set -euo pipefail

# EAL arguments for a run without hugepages, PCI or shared config: safe to run several at once.
EAL_BASE=(--no-huge --no-pci --no-shconf -m 1024 --log-level=error)

WORK=$(mktemp -d /tmp/twinlane-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# json_field FILE KEY...: prints a field of a JSON object (nested keys allowed).
json_field() {
    python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: v=v[k]
print(v)' "$@"
}

# Daemon tests (hitless_update, live_control): flow_stream.py writes sequence-numbered flows
# into in.fifo (read by the policy's net_pcap port) while `twinlane run` forwards them. Both
# are killed on exit; a test that stops one itself clears its variable.
stream_writer=""
daemon=""
INTEGRATION_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
daemon_cleanup() {
    if [ -n "$stream_writer" ]; then kill "$stream_writer" 2>/dev/null || true; fi
    if [ -n "$daemon" ]; then kill -KILL "$daemon" 2>/dev/null || true; fi
    rm -rf "$WORK"
}

# start_stream SECONDS [WRITE_ARGS...]: the writer, in the background, until SECONDS pass or
# `stop` exists.
start_stream() {
    trap daemon_cleanup EXIT
    mkfifo in.fifo
    python3 "$INTEGRATION_DIR/flow_stream.py" write in.fifo --seconds "$1" "${@:2}" \
        --stop-file stop --summary summary.json &
    stream_writer=$!
}

# start_daemon TWINLANE RUN_ARGS...: `TWINLANE run RUN_ARGS` in the background (JSON report in
# report.json, log in daemon.log); returns once its control socket twinlane.sock exists.
start_daemon() {
    trap daemon_cleanup EXIT
    "$1" run "${@:2}" >report.json 2>daemon.log &
    daemon=$!
    for _ in $(seq 200); do
        [ -S twinlane.sock ] && return 0
        kill -0 "$daemon" 2>/dev/null || fail "daemon exited at start: $(cat daemon.log)"
        sleep 0.1
    done
    fail "no control socket after 20 s: $(cat daemon.log)"
}
