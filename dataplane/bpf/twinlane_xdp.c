// SPDX-License-Identifier: BSD-3-Clause
// twinlane's XDP program for AF_XDP ports (DPDK net_af_xdp, devarg xdp_prog=twinlane_xdp.o).
//
// The PMD loads this object, attaches it to the interface and puts one AF_XDP socket per queue
// into `xsks_map` (key = queue index). Everything is redirected to that socket except the
// management traffic the gateway itself must keep answering through the kernel stack when the
// dataplane is busy, restarting or dead:
//   - LLDP (ethertype 0x88cc): link-local, never forwarded; the switch-facing lldpd needs it.
//   - ARP and IPv6 ND (ICMPv6 133-137). By default all of them (the gateway owns addresses on
//     the port). With TL_FLAG_FORWARD_FOREIGN_ARP_ND set in tl_config, only those about one of
//     the gateway's own addresses stay; the rest go to twinlane, which forwards them like any
//     frame, so hosts on both sides of a bump in the wire can resolve each other.
//   - TCP to a management port (22 compiled in, more in tl_mgmt_ports) whose destination is
//     one of the gateway's own addresses (tl_own_v4 / tl_own_v6). SSH between hosts on either
//     side of the gateway is transit traffic and goes to twinlane.
// The maps are filled after attach by twinlane-xdp-config (dataplane/bpf/README.md).
// Parsing is bounded: one optional 802.1Q/802.1ad tag, IPv4 options by IHL, no IPv6 extension
// headers (ND and TCP behind extension headers are treated as transit traffic).
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "twinlane_xdp.h"

// Sized for 64 queues, the policy's largest rx_queues.
struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} xsks_map SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, TL_MAX_OWN_ADDRS);
    __type(key, __u32);  // IPv4 address, network byte order
    __type(value, __u8);
} tl_own_v4 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, TL_MAX_OWN_ADDRS);
    __type(key, struct tl_in6);
    __type(value, __u8);
} tl_own_v6 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, TL_MAX_MGMT_PORTS);
    __type(key, __u16);  // TCP destination port, host byte order
    __type(value, __u8);
} tl_mgmt_ports SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);  // TL_FLAG_* bits
} tl_config SEC(".maps");

// Per-CPU packet counters by verdict reason (read by twinlane-xdp-config --stats).
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, TL_STAT_COUNT);
    __type(key, __u32);
    __type(value, __u64);
} tl_stats SEC(".maps");

#define ETH_P_LLDP_ 0x88cc
#define ARP_TPA_OFFSET 24  // target protocol address in an Ethernet/IPv4 ARP packet
#define ICMPV6_RS 133
#define ICMPV6_REDIRECT 137
#define ICMPV6_NS 135
#define ICMPV6_NA 136

static __always_inline void count(__u32 stat)
{
    __u64 *c = bpf_map_lookup_elem(&tl_stats, &stat);
    if (c)
        *c += 1;
}

static __always_inline int kernel(__u32 stat)
{
    count(stat);
    return XDP_PASS;
}

static __always_inline __u32 flags(void)
{
    __u32 key = 0;
    __u32 *v = bpf_map_lookup_elem(&tl_config, &key);
    return v ? *v : 0;
}

static __always_inline int own_v4(__u32 addr)
{
    return bpf_map_lookup_elem(&tl_own_v4, &addr) != 0;
}

static __always_inline int own_v6(const void *addr)
{
    struct tl_in6 key;
    __builtin_memcpy(&key, addr, sizeof(key));
    return bpf_map_lookup_elem(&tl_own_v6, &key) != 0;
}

static __always_inline int mgmt_port(__u16 port_be)
{
    __u16 port = bpf_ntohs(port_be);
    if (port == TL_DEFAULT_MGMT_PORT)
        return 1;
    return bpf_map_lookup_elem(&tl_mgmt_ports, &port) != 0;
}

SEC("xdp")
int twinlane_xdp(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > data_end)
        return kernel(TL_STAT_PASS_SHORT);

    __u16 proto = eth->h_proto;
    void *l3 = eth + 1;
    if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
        // struct vlan_hdr is kernel-internal: TCI then the inner ethertype.
        __be16 *vlan = l3;
        if ((void *)(vlan + 2) > data_end)
            return kernel(TL_STAT_PASS_SHORT);
        proto = vlan[1];
        l3 = vlan + 2;
    }

    const __u32 cfg = flags();
    const int foreign_to_twinlane = (cfg & TL_FLAG_FORWARD_FOREIGN_ARP_ND) != 0;

    if (proto == bpf_htons(ETH_P_LLDP_))
        return kernel(TL_STAT_PASS_LLDP);

    if (proto == bpf_htons(ETH_P_ARP)) {
        if (!foreign_to_twinlane)
            return kernel(TL_STAT_PASS_ARP);
        __u32 *tpa = l3 + ARP_TPA_OFFSET;
        if ((void *)(tpa + 1) > data_end)
            return kernel(TL_STAT_PASS_ARP);
        if (own_v4(*tpa))
            return kernel(TL_STAT_PASS_ARP);
    } else if (proto == bpf_htons(ETH_P_IP)) {
        struct iphdr *ip = l3;
        if ((void *)(ip + 1) > data_end)
            return kernel(TL_STAT_PASS_SHORT);
        if (ip->protocol == IPPROTO_TCP && (ip->frag_off & bpf_htons(0x1fff)) == 0) {
            struct tcphdr *tcp = (void *)ip + ip->ihl * 4;
            if ((void *)(tcp + 1) <= data_end && mgmt_port(tcp->dest) && own_v4(ip->daddr))
                return kernel(TL_STAT_PASS_MGMT_TCP);
        }
    } else if (proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip6 = l3;
        if ((void *)(ip6 + 1) > data_end)
            return kernel(TL_STAT_PASS_SHORT);
        if (ip6->nexthdr == IPPROTO_ICMPV6) {
            // type, code, checksum, reserved, then the NS/NA target address.
            __u8 *icmp = (void *)(ip6 + 1);
            if ((void *)(icmp + 1) <= data_end && icmp[0] >= ICMPV6_RS &&
                icmp[0] <= ICMPV6_REDIRECT) {
                if (!foreign_to_twinlane)
                    return kernel(TL_STAT_PASS_ND);
                if (own_v6(&ip6->daddr))
                    return kernel(TL_STAT_PASS_ND);
                if (icmp[0] == ICMPV6_NS || icmp[0] == ICMPV6_NA) {
                    void *target = icmp + 8;
                    if (target + sizeof(struct tl_in6) <= data_end && own_v6(target))
                        return kernel(TL_STAT_PASS_ND);
                }
            }
        } else if (ip6->nexthdr == IPPROTO_TCP) {
            struct tcphdr *tcp = (void *)(ip6 + 1);
            if ((void *)(tcp + 1) <= data_end && mgmt_port(tcp->dest) && own_v6(&ip6->daddr))
                return kernel(TL_STAT_PASS_MGMT_TCP);
        }
    }

    count(TL_STAT_REDIRECT);
    // XDP_PASS as the fallback: a queue without a socket (twinlane not running on it) keeps
    // the interface usable through the kernel instead of dropping everything.
    return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
