// SPDX-License-Identifier: BSD-3-Clause
// Shared between the XDP program (twinlane_xdp.c) and its configuration tool
// (twinlane_xdp_config.c): map names, key/value layouts, flags and counter indices. A change
// here changes the maps' ABI: rebuild both.
#ifndef TWINLANE_XDP_H
#define TWINLANE_XDP_H

#include <linux/types.h>

// Map capacities: a gateway has a handful of own addresses and management ports.
#define TL_MAX_OWN_ADDRS 64
#define TL_MAX_MGMT_PORTS 16

// SSH stays with the kernel (for own addresses) even before any configuration.
#define TL_DEFAULT_MGMT_PORT 22

// tl_config[0] bits.
// ARP/ND not about one of the gateway's own addresses goes to twinlane (bump in the wire)
// instead of the kernel.
#define TL_FLAG_FORWARD_FOREIGN_ARP_ND 0x1u

struct tl_in6 {
    __u8 addr[16];
};

// tl_stats indices.
enum tl_stat {
    TL_STAT_REDIRECT = 0,    // handed to bpf_redirect_map (AF_XDP socket, or XDP_PASS if none)
    TL_STAT_PASS_ARP = 1,
    TL_STAT_PASS_ND = 2,
    TL_STAT_PASS_LLDP = 3,
    TL_STAT_PASS_MGMT_TCP = 4,
    TL_STAT_PASS_SHORT = 5,  // truncated headers: the kernel drops or counts them
    TL_STAT_COUNT = 6,
};

#endif
