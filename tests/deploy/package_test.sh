#!/usr/bin/env bash
# The Debian package on this machine (root; exit 77 = SKIP otherwise, or when a twinlane
# package, group or /etc/twinlane is already here, which this test would remove):
#  1. tools/package.sh builds it (incremental after the first build, in SOURCE_ROOT/build-deb
#     or $TWINLANE_DEB_DIR), and lintian reports nothing (errors to pedantic; the overrides in
#     deploy/debian/twinlane.lintian-overrides say why each is there);
#  2. apt-get installs it; twinlane version, twinlane check -c /etc/twinlane/policy.yaml and
#     systemd-analyze verify on the installed unit pass; the group, conffiles, man pages and
#     completions are in place; the installed binary forwards on DPDK null devices with the
#     archive's DPDK;
#  3. purge leaves nothing behind: no file or directory of the package that no other package
#     owns, no /etc/twinlane, no twinlane group, no systemd helper state.
# Usage: package_test.sh SOURCE_ROOT
set -euo pipefail
src=$(realpath "$1")

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: installs a package: needs root"
    exit 77
fi
if dpkg-query -W -f='${Status}' twinlane 2>/dev/null | grep -q installed ||
    getent group twinlane >/dev/null || [ -e /etc/twinlane ]; then
    echo "SKIP: a twinlane package, group or /etc/twinlane is already on this machine"
    exit 77
fi

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
WORK=$(mktemp -d /tmp/twinlane-package.XXXXXX)
installed=0
cleanup() {
    if [ $installed -eq 1 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq twinlane >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

out=${TWINLANE_DEB_DIR:-$src/build-deb}
version=$(sed -n "s/^  version : '\([^']*\)',$/\1/p" "$src/meson.build")
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
deb=$out/twinlane_${version}_${arch}.deb
rm -f "$deb"
TWINLANE_DEB_DIR=$out "$src/tools/package.sh" >"$WORK/build.log" 2>&1 ||
    fail "tools/package.sh: $(tail -30 "$WORK/build.log")"
[ -f "$deb" ] || fail "no $deb after tools/package.sh"
echo "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

# lintian warns about running as root on stderr; its findings go to stdout.
lintian --fail-on error,warning,info,pedantic --display-info --pedantic \
    "$out/twinlane_${version}_${arch}.changes" >"$WORK/lintian.txt" 2>"$WORK/lintian.err" ||
    fail "lintian: $(cat "$WORK/lintian.txt" "$WORK/lintian.err")"
[ ! -s "$WORK/lintian.txt" ] || fail "lintian: $(cat "$WORK/lintian.txt")"
echo "lintian: no tags ($(grep -c '^twinlane:' "$src/deploy/debian/twinlane.lintian-overrides") overridden, reasons in the overrides file)"

installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$deb" \
    >"$WORK/install.log" 2>&1 || fail "apt-get install: $(tail -20 "$WORK/install.log")"
dpkg -L twinlane >"$WORK/files.txt"

[ "$(twinlane version)" = "twinlane $version" ] || fail "twinlane version: $(twinlane version)"
twinlane check -c /etc/twinlane/policy.yaml >"$WORK/check.txt" 2>&1 ||
    fail "twinlane check of the packaged policy: $(cat "$WORK/check.txt")"
grep -q '^OK: /etc/twinlane/policy.yaml' "$WORK/check.txt" || fail "check: $(cat "$WORK/check.txt")"
unit=/lib/systemd/system/twinlane.service
systemd-analyze verify "$unit" >"$WORK/verify.txt" 2>&1 ||
    fail "systemd-analyze verify $unit: $(cat "$WORK/verify.txt")"
[ ! -s "$WORK/verify.txt" ] || fail "systemd-analyze verify $unit: $(cat "$WORK/verify.txt")"
grep -qx 'Group=twinlane' "$unit" || fail "the unit does not run with the twinlane group"
[ ! -e /etc/systemd/system/multi-user.target.wants/twinlane.service ] ||
    fail "the unit was enabled on install (it must wait for the policy to be edited)"
getent group twinlane >/dev/null || fail "no twinlane group after install"
for conffile in /etc/twinlane/policy.yaml /etc/twinlane/twinlane.env; do
    dpkg-query -W -f='${Conffiles}\n' twinlane | grep -q " $conffile " ||
        fail "$conffile is not a conffile"
done
for page in twinlane.8 twinlanectl.8 twinlane-xdp-config.8 twinlane-policy.5; do
    man -w "${page%.*}" >/dev/null 2>&1 || fail "man page ${page%.*} not found"
done
[ -f /usr/lib/twinlane/twinlane_xdp.o ] || fail "no XDP object"
grep -q 'xdp_prog=/usr/lib/twinlane/twinlane_xdp.o' /etc/twinlane/policy.yaml ||
    fail "the packaged policy does not name the packaged XDP object"
completions=$(bash --norc -c 'source /usr/share/bash-completion/completions/twinlane
source /usr/share/bash-completion/completions/twinlanectl
COMP_WORDS=(twinlane ""); COMP_CWORD=1; _twinlane; echo "${COMPREPLY[*]}"
COMP_WORDS=(twinlanectl ""); COMP_CWORD=1; _twinlanectl; echo "${COMPREPLY[*]}"')
grep -q "run check" <<<"$completions" && grep -q "status stats" <<<"$completions" ||
    fail "installed completions offer: $completions"
twinlanectl --help >/dev/null || fail "twinlanectl --help"
twinlane-xdp-config --help >/dev/null || fail "twinlane-xdp-config --help"
# The installed binary with the archive's DPDK (its PMDs from the plugin directory).
timeout 60 twinlane --log-level warn run --json --duration 1 --no-control --metrics-port 0 \
    -c /usr/share/doc/twinlane/examples/default.yaml -- --no-huge --no-pci --no-shconf \
    -m 1024 -l 0-1 --log-level=error --file-prefix "tl-pkg-$$" >"$WORK/run.json" 2>"$WORK/run.log" ||
    fail "installed twinlane run on null devices: $(tail -5 "$WORK/run.log")"
python3 - "$WORK/run.json" <<'PY' || fail "installed twinlane forwarded nothing: $(cat "$WORK/run.json")"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["tx_packets"] > 0, c
PY
echo "installed: version, check, systemd-analyze verify, group, conffiles, man pages," \
     "completions, a 1 s run on null devices"

DEBIAN_FRONTEND=noninteractive apt-get purge -y -q twinlane >"$WORK/purge.log" 2>&1 ||
    fail "apt-get purge: $(tail -20 "$WORK/purge.log")"
installed=0
! dpkg-query -W -f='${Status}' twinlane 2>/dev/null | grep -q installed || fail "still installed"
left=()
while read -r path; do
    [ "$path" != /. ] || continue  # dpkg -L lists the root as "/."
    [ -e "$path" ] || [ -L "$path" ] || continue
    # Shared directories (/usr/bin, /usr/share/man/man8, ...) belong to other packages too.
    dpkg -S "$path" >/dev/null 2>&1 || left+=("$path")
done <"$WORK/files.txt"
[ ${#left[@]} -eq 0 ] || fail "left behind after purge: ${left[*]}"
[ ! -e /etc/twinlane ] || fail "/etc/twinlane left after purge: $(ls -la /etc/twinlane)"
! getent group twinlane >/dev/null || fail "the twinlane group is left after purge"
for state in /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked; do
    [ -z "$(find "$state" -name 'twinlane*' 2>/dev/null)" ] || fail "systemd helper state left in $state"
done
echo "PASS: package built lintian-clean, installed and checked, purged without a trace"
