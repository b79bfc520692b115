// ECN codepoint access and CE marking on a packet's IP header (IPv4 and IPv6).
//
// Reads the two ECN bits through Packet::l3, by the header's version nibble (RFC 3168).
// Marking CE on IPv4 updates the header checksum incrementally (RFC 1624, eqn. 3) so no full
// recompute is needed; IPv6 has no header checksum. A packet without l3 or of another version
// is Not-ECT. Thread-safety: touches only the given packet's bytes. O(1), no allocation.
#pragma once

#include <cstdint>

#include "sched/packet.h"

namespace twinlane::sched {

enum class EcnCodepoint : uint8_t { not_ect = 0, ect1 = 1, ect0 = 2, ce = 3 };

EcnCodepoint read_ecn(const Packet& packet);

// Sets CE on an ECN-capable packet and returns true; returns false (packet untouched) for
// Not-ECT, which the caller must drop instead. An already-CE packet returns true unchanged.
bool mark_ce(const Packet& packet);

// Full IPv4 header checksum (for tests and for building packets); `header_bytes` = IHL*4.
uint16_t ipv4_header_checksum(const uint8_t* header, uint32_t header_bytes);

}  // namespace twinlane::sched
