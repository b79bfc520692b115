#include "replay/wire_segments.h"

#include <algorithm>

#include "classifier/byte_order.h"
#include "classifier/dscp_rewrite.h"

namespace twinlane::replay {
namespace {

constexpr uint8_t kTcp = 6;
constexpr uint8_t kUdp = 17;
constexpr uint8_t kTcpFin = 0x01;
constexpr uint8_t kTcpPsh = 0x08;
// GRO/TSO frames are at most 64 KiB (IPv4's length field), BIG TCP's a few hundred KiB; a
// record claiming more is a damaged length (libpcap does not bound it), which would otherwise
// turn into millions of segments.
constexpr uint32_t kMaxSplitWireBytes = 1u << 20;

using classifier::load_be16;
using classifier::load_be32;
using classifier::store_be16;
using classifier::store_be32;

}  // namespace

SegmentPlan plan_segments(std::span<const uint8_t> captured, uint32_t wire_length,
                          uint16_t l3_offset, uint8_t ip_version, uint32_t max_frame_bytes) {
    SegmentPlan plan;
    plan.wire_length = wire_length;
    if (max_frame_bytes == 0 || wire_length <= max_frame_bytes) return plan;
    if (wire_length > kMaxSplitWireBytes) return plan;
    const size_t size = captured.size();
    const uint8_t* bytes = captured.data();
    uint32_t l4_offset = 0;
    uint8_t protocol = 0;
    if (ip_version == 4) {
        if (size < size_t{l3_offset} + 20) return plan;
        const uint8_t* ip = bytes + l3_offset;
        const uint32_t ihl = uint32_t(ip[0] & 0x0F) * 4;
        const bool fragment = (load_be16(ip + 6) & 0x3FFF) != 0;  // MF or a fragment offset
        if (ihl < 20 || fragment) return plan;
        l4_offset = l3_offset + ihl;
        protocol = ip[9];
    } else if (ip_version == 6) {
        if (size < size_t{l3_offset} + 40) return plan;
        l4_offset = l3_offset + 40u;
        protocol = bytes[l3_offset + 6];  // extension headers: not split
    } else {
        return plan;
    }
    uint32_t header = 0;
    if (protocol == kTcp) {
        if (size < size_t{l4_offset} + 20) return plan;
        const uint32_t data_offset = uint32_t(bytes[l4_offset + 12] >> 4) * 4;
        if (data_offset < 20) return plan;
        header = l4_offset + data_offset;
    } else if (protocol == kUdp) {
        header = l4_offset + 8;
    } else {
        return plan;
    }
    if (header > size || header >= max_frame_bytes || header >= wire_length) return plan;
    plan.header_bytes = header;
    plan.payload_bytes = max_frame_bytes - header;
    plan.total_payload = wire_length - header;
    plan.count = (plan.total_payload + plan.payload_bytes - 1) / plan.payload_bytes;
    plan.l3_offset = l3_offset;
    plan.l4_offset = uint16_t(l4_offset);
    plan.ip_version = ip_version;
    plan.l4_protocol = protocol;
    return plan;
}

void write_segment(const SegmentPlan& plan, std::span<const uint8_t> captured, uint32_t k,
                   std::vector<uint8_t>& out) {
    if (plan.count == 1) {
        out.assign(captured.begin(), captured.end());
        return;
    }
    const uint32_t wire = plan.segment_wire_length(k);
    const size_t payload_start = size_t{plan.header_bytes} + size_t{k} * plan.payload_bytes;
    const size_t payload_end = payload_start + (wire - plan.header_bytes);
    out.assign(captured.begin(), captured.begin() + plan.header_bytes);
    if (payload_start < captured.size()) {
        out.insert(out.end(), captured.begin() + ptrdiff_t(payload_start),
                   captured.begin() + ptrdiff_t(std::min(payload_end, captured.size())));
    }
    uint8_t* ip = out.data() + plan.l3_offset;
    if (plan.ip_version == 4) {
        const uint32_t ihl = uint32_t(ip[0] & 0x0F) * 4;
        store_be16(ip + 2, uint16_t(wire - plan.l3_offset));
        store_be16(ip + 4, uint16_t(load_be16(ip + 4) + k));  // TSO: one IP ID per segment
        store_be16(ip + 10, classifier::ipv4_header_checksum(ip, ihl));
    } else {
        store_be16(ip + 4, uint16_t(wire - plan.l3_offset - 40));
    }
    uint8_t* l4 = out.data() + plan.l4_offset;
    if (plan.l4_protocol == kTcp) {
        store_be32(l4 + 4, load_be32(l4 + 4) + k * plan.payload_bytes);
        if (k + 1 != plan.count) l4[13] &= uint8_t(~(kTcpFin | kTcpPsh));
    } else {
        store_be16(l4 + 4, uint16_t(wire - plan.l4_offset));
    }
}

}  // namespace twinlane::replay
