#!/usr/bin/env bash
# Builds the Debian package from this tree (packaging in deploy/debian/):
#   tools/package.sh                      -> build-deb/twinlane_VERSION_ARCH.deb (+ -dbgsym .deb,
#                                            .buildinfo, .changes)
#   TWINLANE_DEB_DIR=DIR tools/package.sh    another output directory
# Then: apt install ./build-deb/twinlane_*.deb (deploy/README.md). Needs debhelper, dpkg-dev
# and the build dependencies of deploy/debian/control (tools/setup.sh installs them;
# dpkg-buildpackage names any that are missing).
#
# The tree (what git tracks plus new files it does not ignore, with their modification times)
# is copied to DIR/src with deploy/debian as debian/, and dpkg-buildpackage runs there without
# a pre-clean: its meson build directory (DIR/src/obj-*) survives, so a second package build
# recompiles only what changed (the first compiles everything: a few minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${TWINLANE_DEB_DIR:-$root/build-deb}
src=$out/src

version=$(sed -n "s/^  version : '\([^']*\)',$/\1/p" meson.build)
packaged=$(dpkg-parsechangelog -l deploy/debian/changelog -S Version)
if [ "$version" != "$packaged" ]; then
    echo "package: meson.build says $version, deploy/debian/changelog $packaged: add a" \
         "changelog entry (dch -c deploy/debian/changelog -v $version)" >&2
    exit 1
fi

mkdir -p "$src"
find "$src" -mindepth 1 -maxdepth 1 ! -name 'obj-*' -exec rm -rf {} +
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Index entries deleted in the work tree are left out.
    git ls-files -z --cached --others --exclude-standard |
        python3 -c 'import os, sys
sys.stdout.buffer.write(b"".join(p + b"\0" for p in sys.stdin.buffer.read().split(b"\0")
                                 if p and os.path.lexists(p)))' |
        tar --null --no-recursion -T - -cf - | tar -xf - -C "$src"
else
    tar --exclude='./build*' --exclude=./out --exclude=./.git -cf - . | tar -xf - -C "$src"
fi
cp -a deploy/debian "$src/debian"

echo "package: twinlane $version in $src"
(cd "$src" && dpkg-buildpackage -b -us -uc --no-pre-clean)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
echo "package: $out/twinlane_${version}_${arch}.deb"
