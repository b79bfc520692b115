# Shared helpers for integration tests of the real binary (sourced, not run).
set -euo pipefail

# EAL arguments for a run without hugepages, PCI or shared config: safe to run several at once.
EAL_BASE=(--no-huge --no-pci --no-shconf -m 512 --log-level=error)

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
