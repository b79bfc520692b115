// Helpers shared by the scheduler unit tests: spec builders, packet factories and IP headers.
// Test-only; not part of the library.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sched/ecn.h"
#include "sched/scheduler.h"

namespace twinlane::sched::testing {

inline NodeSpec make_node(std::string name, NodeKind kind, std::string parent = "") {
    NodeSpec node;
    node.name = std::move(name);
    node.kind = kind;
    node.parent = std::move(parent);
    return node;
}

inline NodeSpec make_leaf(std::string name, NodeKind kind, std::string parent,
                          uint32_t limit_packets = 100000, uint64_t limit_bytes = 1ull << 32) {
    NodeSpec node = make_node(std::move(name), kind, std::move(parent));
    node.limit_packets = limit_packets;
    node.limit_bytes = limit_bytes;
    return node;
}

inline std::unique_ptr<Scheduler> build_or_fail(const TreeSpec& spec) {
    Scheduler::BuildResult result = Scheduler::build(spec);
    EXPECT_FALSE(result.error.has_value()) << (result.error ? result.error->to_string() : "");
    return std::move(result.scheduler);
}

// A packet whose `handle` carries a test id so that every packet can be traced.
inline Packet make_packet(uint16_t leaf, uint32_t length_bytes, uint32_t flow_hash = 0,
                          uint64_t id = 0) {
    Packet packet;
    packet.handle = reinterpret_cast<void*>(static_cast<uintptr_t>(id));
    packet.leaf = leaf;
    packet.length_bytes = length_bytes;
    packet.flow_hash = flow_hash;
    return packet;
}

inline uint64_t id_of(const Packet& packet) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(packet.handle));
}

// A 20-byte IPv4 header with a valid checksum and the given TOS byte.
inline std::vector<uint8_t> make_ipv4_header(uint8_t tos, uint16_t id = 0x1234) {
    std::vector<uint8_t> header = {0x45,
                                   tos,
                                   0x05,
                                   0xdc,
                                   static_cast<uint8_t>(id >> 8),
                                   static_cast<uint8_t>(id),
                                   0x40,
                                   0x00,
                                   0x40,
                                   0x11,
                                   0x00,
                                   0x00,
                                   10,
                                   0,
                                   0,
                                   1,
                                   10,
                                   0,
                                   0,
                                   2};
    const uint16_t checksum = ipv4_header_checksum(header.data(), 20);
    header[10] = static_cast<uint8_t>(checksum >> 8);
    header[11] = static_cast<uint8_t>(checksum);
    return header;
}

// A 40-byte IPv6 header with the given traffic class and flow label 0xabcde.
inline std::vector<uint8_t> make_ipv6_header(uint8_t traffic_class) {
    std::vector<uint8_t> header(40, 0);
    header[0] = static_cast<uint8_t>(0x60 | (traffic_class >> 4));
    header[1] = static_cast<uint8_t>(((traffic_class & 0x0f) << 4) | 0x0a);
    header[2] = 0xbc;
    header[3] = 0xde;
    return header;
}

inline uint8_t ipv6_traffic_class(const uint8_t* header) {
    return static_cast<uint8_t>(((header[0] & 0x0f) << 4) | (header[1] >> 4));
}

}  // namespace twinlane::sched::testing
