#!/usr/bin/env bash
# Applies .clang-format to every C/C++ source of the project (or checks with --check).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=(-i)
[ "${1:-}" = "--check" ] && mode=(--dry-run --Werror)
git ls-files '*.h' '*.cc' '*.cpp' '*.hpp' | grep -v '^dataplane/bpf/' | xargs -r clang-format "${mode[@]}"
