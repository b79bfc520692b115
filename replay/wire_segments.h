// Wire segments: how a captured TCP or UDP frame longer than the egress port's largest frame
// goes on the wire.
//
// Captures taken on a host with TSO/GSO/GRO on (tcpdump on a training server, an iperf3 or
// NCCL run) hold TCP and UDP "frames" of up to 64 KiB that the NIC sent, or had received, as
// MTU-sized packets. Replayed as one packet, such a record is dropped as oversize by every
// discipline or, if it were let through, occupies the link for its whole length in one piece,
// which no inference packet on the real wire ever waited behind. plan_segments() splits it the
// way TSO does: the same Ethernet/IP/TCP-or-UDP headers on every segment and the payload in
// pieces of (max_frame_bytes - headers) bytes. write_segment() builds segment k's frame for an
// output pcap: IPv4 total length, ID (+k) and header checksum, IPv6 payload length, TCP
// sequence number (+ payload offset) with FIN and PSH on the last segment only, UDP length.
// Only the headers are rewritten; TCP/UDP checksums stay as captured (a host capture of an
// offloaded frame carries a partial one anyway).
//
// Not split (count 1, replayed as today): non-IP frames, IPv4 fragments, IPv6 with extension
// headers before TCP/UDP, other protocols, frames whose headers are not fully captured,
// frames whose headers leave no room for payload in max_frame_bytes, and records claiming
// more than 1 MiB on the wire (a damaged length, not an offload).
// Pure functions over byte spans: no allocation except the caller's output vector.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace twinlane::replay {

struct SegmentPlan {
    uint32_t count = 1;          // segments; 1: send the record as it is
    uint32_t header_bytes = 0;   // Ethernet .. end of the TCP/UDP header, copied to each segment
    uint32_t payload_bytes = 0;  // payload per segment (the last may carry less)
    uint32_t total_payload = 0;  // payload of the whole record (wire length - header_bytes)
    uint32_t wire_length = 0;    // of the whole record
    uint16_t l3_offset = 0;
    uint16_t l4_offset = 0;
    uint8_t ip_version = 0;
    uint8_t l4_protocol = 0;  // 6 TCP, 17 UDP

    // Bytes on the wire of segment k (< count); the whole record when count is 1.
    uint32_t segment_wire_length(uint32_t k) const {
        if (count == 1) return wire_length;
        const uint32_t offset = k * payload_bytes;
        const uint32_t left = total_payload - offset;
        return header_bytes + (left < payload_bytes ? left : payload_bytes);
    }
};

// `l3_offset` and `ip_version` as the classifier found them (VLAN tags before the IP header
// are part of the copied headers). max_frame_bytes 0 disables splitting.
SegmentPlan plan_segments(std::span<const uint8_t> captured, uint32_t wire_length,
                          uint16_t l3_offset, uint8_t ip_version, uint32_t max_frame_bytes);

// Segment k's frame (headers patched, then the captured part of its payload) into `out`.
// A record snapped short gives segments snapped short: their wire length stays
// plan.segment_wire_length(k).
void write_segment(const SegmentPlan& plan, std::span<const uint8_t> captured, uint32_t k,
                   std::vector<uint8_t>& out);

}  // namespace twinlane::replay
