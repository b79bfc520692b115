#!/usr/bin/env bash
# Reserves hugepages for DPDK and mounts hugetlbfs, now and across reboots. Idempotent: running
# it again with the same arguments changes nothing; it prints what it did or found.
#
#   deploy/setup-hugepages.sh [--2m COUNT] [--1g COUNT] [--node N] [--no-persist] [--dry-run]
#     --2m COUNT     2 MiB pages to reserve (default 1024 = 2 GiB) on every NUMA node (or --node)
#     --1g COUNT     1 GiB pages to reserve (default 0); at runtime this may fail on a fragmented
#                    machine: then reserve them on the kernel command line (printed below)
#     --node N       reserve on NUMA node N only (the NIC's node: cat /sys/bus/pci/devices/ADDR/numa_node)
#     --no-persist   do not write /etc/sysctl.d, /etc/fstab or /etc/tmpfiles.d
#     --dry-run      print what would be done, change nothing
# Mounts: /dev/hugepages (2 MiB, pagesize=2M) and /dev/hugepages-1G (pagesize=1G), each used by
# the EAL with --huge-dir.
set -euo pipefail

pages_2m=1024
pages_1g=0
node=
persist=1
dry=0
while [ $# -gt 0 ]; do
    case $1 in
    --2m) pages_2m=${2:?--2m COUNT}; shift 2 ;;
    --1g) pages_1g=${2:?--1g COUNT}; shift 2 ;;
    --node) node=${2:?--node N}; shift 2 ;;
    --no-persist) persist=0; shift ;;
    --dry-run) dry=1; shift ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "setup-hugepages: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
done
for n in "$pages_2m" "$pages_1g"; do
    [[ $n =~ ^[0-9]+$ ]] || { echo "setup-hugepages: page counts are whole numbers" >&2; exit 2; }
done
if [ "$(id -u)" -ne 0 ] && [ $dry -eq 0 ]; then
    echo "setup-hugepages: needs root (or --dry-run)" >&2
    exit 1
fi

run() {  # prints, and runs unless --dry-run
    echo "  + $*"
    [ $dry -eq 1 ] || "$@"
}

# reserve SIZE_KB COUNT: per node (sysfs), or system-wide when the kernel has no NUMA sysfs.
reserve() {
    local kb=$1 count=$2 dirs=() d
    if [ -n "$node" ]; then
        dirs=("/sys/devices/system/node/node$node/hugepages/hugepages-${kb}kB")
    elif compgen -G "/sys/devices/system/node/node*/hugepages/hugepages-${kb}kB" >/dev/null; then
        dirs=(/sys/devices/system/node/node*/hugepages/hugepages-"${kb}"kB)
    else
        dirs=("/sys/kernel/mm/hugepages/hugepages-${kb}kB")
    fi
    for d in "${dirs[@]}"; do
        if [ ! -d "$d" ]; then
            echo "$((kb / 1024)) MiB pages: not supported here ($d missing)"
            [ "$count" -eq 0 ] || return 1
            continue
        fi
        local have
        have=$(cat "$d/nr_hugepages")
        if [ "$have" -eq "$count" ]; then
            echo "$((kb / 1024)) MiB pages: $have reserved in ${d%/hugepages/*} (unchanged)"
            continue
        fi
        if [ $dry -eq 1 ]; then
            echo "  + echo $count > $d/nr_hugepages   (now $have)"
            continue
        fi
        echo "$count" >"$d/nr_hugepages"
        local got
        got=$(cat "$d/nr_hugepages")
        echo "$((kb / 1024)) MiB pages: $have -> $got in ${d%/hugepages/*} (asked $count)"
        if [ "$got" -lt "$count" ]; then
            echo "  memory is too fragmented for $count pages now; reserve them at boot instead:"
            echo "  kernel command line: default_hugepagesz=1G hugepagesz=1G hugepages=$pages_1g hugepagesz=2M hugepages=$pages_2m"
        fi
    done
}

mount_hugetlbfs() {  # mount_hugetlbfs DIR PAGESIZE
    local dir=$1 size=$2
    if mountpoint -q "$dir" && grep -q " $dir hugetlbfs .*pagesize=$size" /proc/mounts; then
        echo "$dir: hugetlbfs pagesize=$size already mounted (unchanged)"
        return
    fi
    run mkdir -p "$dir"
    mountpoint -q "$dir" && run umount "$dir"
    run mount -t hugetlbfs -o pagesize="$size" nodev "$dir"
}

echo "setup-hugepages: 2 MiB x $pages_2m, 1 GiB x $pages_1g${node:+ on node $node}"
reserve 2048 "$pages_2m"
reserve 1048576 "$pages_1g" || echo "1 GiB pages: the CPU lacks pdpe1gb; use 2 MiB pages"
mount_hugetlbfs /dev/hugepages 2M
[ "$pages_1g" -eq 0 ] || mount_hugetlbfs /dev/hugepages-1G 1G

if [ $persist -eq 1 ]; then
    # 2 MiB pages through sysctl (applied early at boot by systemd-sysctl); 1 GiB pages are
    # reliable only from the kernel command line, printed rather than edited.
    conf=/etc/sysctl.d/80-twinlane-hugepages.conf
    want="vm.nr_hugepages = $pages_2m"
    if [ -n "$node" ]; then
        echo "persistence: per-node counts are not expressible in sysctl; add to the kernel command line:"
        echo "  hugepagesz=2M hugepages=$node:$pages_2m hugepagesz=1G hugepages=$node:$pages_1g"
    elif [ -f "$conf" ] && grep -qx "$want" "$conf"; then
        echo "$conf: already '$want' (unchanged)"
    else
        echo "$conf: '$want'"
        [ $dry -eq 1 ] || printf '# written by twinlane deploy/setup-hugepages.sh\n%s\n' "$want" >"$conf"
    fi
    add_fstab() {  # add_fstab DIR PAGESIZE
        if grep -qE "^[^#]*[[:space:]]$1[[:space:]]+hugetlbfs" /etc/fstab; then
            echo "/etc/fstab: $1 already listed (unchanged)"
        else
            echo "/etc/fstab: nodev $1 hugetlbfs pagesize=$2 0 0"
            [ $dry -eq 1 ] || echo "nodev $1 hugetlbfs pagesize=$2 0 0" >>/etc/fstab
        fi
    }
    add_fstab /dev/hugepages 2M
    if [ "$pages_1g" -gt 0 ]; then
        add_fstab /dev/hugepages-1G 1G
        if ! grep -qw "hugepagesz=1G" /proc/cmdline; then
            echo "1 GiB pages at boot: add to GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub:"
            echo "  default_hugepagesz=1G hugepagesz=1G hugepages=$pages_1g"
        fi
    fi
fi
grep -E '^(HugePages_Total|HugePages_Free|Hugepagesize)' /proc/meminfo | sed 's/^/now: /'
