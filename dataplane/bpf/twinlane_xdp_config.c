// SPDX-License-Identifier: BSD-3-Clause
// twinlane-xdp-config: fills the maps of the twinlane XDP program that DPDK's net_af_xdp PMD
// attached to an interface (devarg xdp_prog=twinlane_xdp.o), and shows its counters.
//
//   twinlane-xdp-config [options] IFACE...
//     --addr ADDR            a gateway address (IPv4 or IPv6); repeatable
//     --iface-addrs          add every address currently on each IFACE
//     --port PORT            another management TCP port besides 22; repeatable
//     --forward-foreign-arp-nd
//                            ARP/ND not about a gateway address goes to twinlane (bump in
//                            the wire) instead of the kernel
//     --wait SECONDS         wait up to this long for the program to be attached (default 0)
//     --stats                print the program's counters (nothing is changed unless other
//                            options are given too)
//
// The PMD loads one program instance per port, so each IFACE is configured separately. The
// address, port and flag sets are replaced, not merged: running the same command again gives
// the same state. The program is found through the interface's attached XDP program id and its
// maps by name, so no bpffs pinning is needed and nothing is left behind when twinlane exits.
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "twinlane_xdp.h"

#define MAX_ARGS 64

struct options {
    const char *ifaces[MAX_ARGS];
    int n_ifaces;
    const char *addrs[MAX_ARGS];
    int n_addrs;
    unsigned ports[TL_MAX_MGMT_PORTS];
    int n_ports;
    int iface_addrs;
    int forward_foreign;
    int wait_seconds;
    int stats;
    int configure;
};

struct maps {
    int own_v4, own_v6, ports, config, stats;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: twinlane-xdp-config [--addr ADDR]... [--iface-addrs] [--port PORT]...\n"
            "                           [--forward-foreign-arp-nd] [--wait SECONDS] [--stats]\n"
            "                           IFACE...\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int has_value = i + 1 < argc;
        if (strcmp(a, "--addr") == 0 && has_value) {
            if (o->n_addrs == MAX_ARGS) {
                fprintf(stderr, "twinlane-xdp-config: at most %d --addr\n", MAX_ARGS);
                return -1;
            }
            o->addrs[o->n_addrs++] = argv[++i];
            o->configure = 1;
        } else if (strcmp(a, "--port") == 0 && has_value) {
            char *end = NULL;
            unsigned long p = strtoul(argv[++i], &end, 10);
            if (*end != '\0' || p == 0 || p > 65535) {
                fprintf(stderr, "twinlane-xdp-config: --port %s: not a port (1-65535)\n",
                        argv[i]);
                return -1;
            }
            if (o->n_ports == TL_MAX_MGMT_PORTS) {
                fprintf(stderr, "twinlane-xdp-config: at most %d --port\n", TL_MAX_MGMT_PORTS);
                return -1;
            }
            o->ports[o->n_ports++] = (unsigned)p;
            o->configure = 1;
        } else if (strcmp(a, "--wait") == 0 && has_value) {
            char *end = NULL;
            long s = strtol(argv[++i], &end, 10);
            if (*end != '\0' || s < 0 || s > 3600) {
                fprintf(stderr, "twinlane-xdp-config: --wait %s: seconds 0-3600\n", argv[i]);
                return -1;
            }
            o->wait_seconds = (int)s;
        } else if (strcmp(a, "--iface-addrs") == 0) {
            o->iface_addrs = 1;
            o->configure = 1;
        } else if (strcmp(a, "--forward-foreign-arp-nd") == 0) {
            o->forward_foreign = 1;
            o->configure = 1;
        } else if (strcmp(a, "--stats") == 0) {
            o->stats = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (a[0] == '-') {
            fprintf(stderr, "twinlane-xdp-config: unknown or incomplete option '%s'\n", a);
            return -1;
        } else {
            if (o->n_ifaces == MAX_ARGS) {
                fprintf(stderr, "twinlane-xdp-config: at most %d interfaces\n", MAX_ARGS);
                return -1;
            }
            o->ifaces[o->n_ifaces++] = a;
        }
    }
    if (o->n_ifaces == 0) {
        usage(stderr);
        return -1;
    }
    if (!o->configure && !o->stats)
        o->configure = 1;  // no option: reset to the defaults (no addresses, port 22 only)
    return 0;
}

// The id of the XDP program attached to ifindex in any mode (native, generic, offload).
static __u32 attached_prog_id(int ifindex)
{
    LIBBPF_OPTS(bpf_xdp_query_opts, q);
    if (bpf_xdp_query(ifindex, 0, &q) != 0)
        return 0;
    if (q.prog_id)
        return q.prog_id;
    if (q.drv_prog_id)
        return q.drv_prog_id;
    if (q.skb_prog_id)
        return q.skb_prog_id;
    return q.hw_prog_id;
}

static int find_maps(__u32 prog_id, struct maps *m)
{
    int prog_fd = bpf_prog_get_fd_by_id(prog_id);
    if (prog_fd < 0)
        return -errno;
    __u32 map_ids[32];
    struct bpf_prog_info info;
    memset(&info, 0, sizeof(info));
    info.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
    info.map_ids = (__u64)(unsigned long)map_ids;
    __u32 len = sizeof(info);
    int err = bpf_obj_get_info_by_fd(prog_fd, &info, &len);
    close(prog_fd);
    if (err)
        return -errno;
    *m = (struct maps){-1, -1, -1, -1, -1};
    const __u32 n = info.nr_map_ids < 32 ? info.nr_map_ids : 32;
    for (__u32 i = 0; i < n; i++) {
        int fd = bpf_map_get_fd_by_id(map_ids[i]);
        if (fd < 0)
            continue;
        struct bpf_map_info mi;
        memset(&mi, 0, sizeof(mi));
        __u32 mlen = sizeof(mi);
        int *slot = NULL;
        if (bpf_obj_get_info_by_fd(fd, &mi, &mlen) == 0) {
            if (strcmp(mi.name, "tl_own_v4") == 0)
                slot = &m->own_v4;
            else if (strcmp(mi.name, "tl_own_v6") == 0)
                slot = &m->own_v6;
            else if (strcmp(mi.name, "tl_mgmt_ports") == 0)
                slot = &m->ports;
            else if (strcmp(mi.name, "tl_config") == 0)
                slot = &m->config;
            else if (strcmp(mi.name, "tl_stats") == 0)
                slot = &m->stats;
        }
        if (slot && *slot < 0)
            *slot = fd;
        else
            close(fd);
    }
    if (m->own_v4 < 0 || m->own_v6 < 0 || m->ports < 0 || m->config < 0 || m->stats < 0)
        return -ENOENT;
    return 0;
}

static void close_maps(struct maps *m)
{
    int fds[] = {m->own_v4, m->own_v6, m->ports, m->config, m->stats};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

// Deletes every key of a hash map (keys of at most 16 bytes).
static int clear_hash(int fd)
{
    unsigned char key[16];
    // Always delete the first key: deleting while walking with get_next_key can skip keys.
    while (bpf_map_get_next_key(fd, NULL, key) == 0)
        if (bpf_map_delete_elem(fd, key) != 0)
            return -errno;
    return 0;
}

static int add_addr(const struct maps *m, const char *text, const char *iface)
{
    const __u8 one = 1;
    struct in_addr v4;
    struct tl_in6 v6;
    if (inet_pton(AF_INET, text, &v4) == 1) {
        if (bpf_map_update_elem(m->own_v4, &v4.s_addr, &one, BPF_ANY) != 0)
            return -errno;
    } else if (inet_pton(AF_INET6, text, v6.addr) == 1) {
        if (bpf_map_update_elem(m->own_v6, &v6, &one, BPF_ANY) != 0)
            return -errno;
    } else {
        fprintf(stderr, "twinlane-xdp-config: --addr %s: not an IPv4 or IPv6 address\n", text);
        return -EINVAL;
    }
    printf("  %s: own address %s\n", iface, text);
    return 0;
}

static int add_iface_addrs(const struct maps *m, const char *iface)
{
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0)
        return -errno;
    int err = 0;
    for (struct ifaddrs *a = list; a && !err; a = a->ifa_next) {
        if (!a->ifa_addr || strcmp(a->ifa_name, iface) != 0)
            continue;
        char text[INET6_ADDRSTRLEN];
        if (a->ifa_addr->sa_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)a->ifa_addr)->sin_addr, text,
                      sizeof(text));
        else if (a->ifa_addr->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr, text,
                      sizeof(text));
        else
            continue;
        err = add_addr(m, text, iface);
    }
    freeifaddrs(list);
    return err;
}

static int configure(const struct maps *m, const struct options *o, const char *iface)
{
    int err = clear_hash(m->own_v4);
    if (!err)
        err = clear_hash(m->own_v6);
    if (!err)
        err = clear_hash(m->ports);
    if (err)
        return err;
    for (int i = 0; i < o->n_addrs && !err; i++)
        err = add_addr(m, o->addrs[i], iface);
    if (!err && o->iface_addrs)
        err = add_iface_addrs(m, iface);
    const __u8 one = 1;
    for (int i = 0; i < o->n_ports && !err; i++) {
        __u16 port = (__u16)o->ports[i];
        if (bpf_map_update_elem(m->ports, &port, &one, BPF_ANY) != 0)
            err = -errno;
        else
            printf("  %s: management TCP port %u\n", iface, o->ports[i]);
    }
    if (err)
        return err;
    __u32 key = 0;
    __u32 flags = o->forward_foreign ? TL_FLAG_FORWARD_FOREIGN_ARP_ND : 0;
    if (bpf_map_update_elem(m->config, &key, &flags, BPF_ANY) != 0)
        return -errno;
    printf("  %s: ARP/ND not about own addresses -> %s\n", iface,
           o->forward_foreign ? "twinlane (forwarded)" : "kernel");
    return 0;
}

static int print_stats(const struct maps *m, const char *iface)
{
    static const char *names[TL_STAT_COUNT] = {"redirect", "pass_arp", "pass_nd",
                                               "pass_lldp", "pass_mgmt_tcp", "pass_short"};
    const int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0)
        return ncpu;
    __u64 *values = calloc((size_t)ncpu, sizeof(__u64));
    if (!values)
        return -ENOMEM;
    printf("%s:", iface);
    for (__u32 k = 0; k < TL_STAT_COUNT; k++) {
        if (bpf_map_lookup_elem(m->stats, &k, values) != 0) {
            free(values);
            return -errno;
        }
        __u64 sum = 0;
        for (int c = 0; c < ncpu; c++)
            sum += values[c];
        printf(" %s=%llu", names[k], (unsigned long long)sum);
    }
    printf("\n");
    free(values);
    return 0;
}

int main(int argc, char **argv)
{
    struct options o;
    memset(&o, 0, sizeof(o));
    if (parse_args(argc, argv, &o) != 0)
        return 2;
    int failed = 0;
    for (int i = 0; i < o.n_ifaces; i++) {
        const char *iface = o.ifaces[i];
        const int ifindex = (int)if_nametoindex(iface);
        if (ifindex == 0) {
            fprintf(stderr, "twinlane-xdp-config: %s: no such interface\n", iface);
            failed = 1;
            continue;
        }
        // Polled in 100 ms steps: the PMD attaches the program during twinlane's port setup.
        __u32 prog_id = attached_prog_id(ifindex);
        for (int step = 0; prog_id == 0 && step < o.wait_seconds * 10; step++) {
            const struct timespec t = {0, 100 * 1000 * 1000};
            nanosleep(&t, NULL);
            prog_id = attached_prog_id(ifindex);
        }
        if (prog_id == 0) {
            fprintf(stderr, "twinlane-xdp-config: %s: no XDP program attached\n", iface);
            failed = 1;
            continue;
        }
        struct maps m;
        int err = find_maps(prog_id, &m);
        if (err) {
            fprintf(stderr,
                    "twinlane-xdp-config: %s: XDP program %u is not twinlane's (maps: %s)\n",
                    iface, prog_id, strerror(-err));
            close_maps(&m);
            failed = 1;
            continue;
        }
        if (o.configure)
            err = configure(&m, &o, iface);
        if (!err && o.stats)
            err = print_stats(&m, iface);
        if (err) {
            fprintf(stderr, "twinlane-xdp-config: %s: %s\n", iface, strerror(-err));
            failed = 1;
        }
        close_maps(&m);
    }
    return failed;
}
