// DSCP rewriting in packet bytes, for a rule's remark action. Keeps the ECN bits, and for IPv4
// updates the header checksum incrementally (RFC 1624, eqn. 3) instead of recomputing it, so
// the cost does not depend on IP options. Pure functions over caller-owned bytes; thread-safe
// for distinct packets.
#pragma once

#include <cstdint>

namespace twinlane::classifier {

// `l3` points at the IPv4 or IPv6 header (Result::l3_offset into the frame); `dscp` is 0..63.
// Returns false (and writes nothing) if ip_version is not 4 or 6 or dscp > 63.
bool rewrite_dscp(uint8_t* l3, uint8_t ip_version, uint8_t dscp);

// Reads the DSCP of the IP header at `l3` (0 if ip_version is not 4 or 6).
uint8_t read_dscp(const uint8_t* l3, uint8_t ip_version);

// Full RFC 791 checksum of an IPv4 header of `header_bytes` (reference for tests/tools).
uint16_t ipv4_header_checksum(const uint8_t* l3, uint32_t header_bytes);

}  // namespace twinlane::classifier
