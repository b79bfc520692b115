// libFuzzer harness over parse + classify. The first input byte selects options (VXLAN inner
// parsing, malformed policy, a headers-only buffer shorter than the wire length), the rest is
// the frame. Built with -Dfuzz=true under clang; see tests/classifier/run_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "classifier/classifier.h"
#include "classifier/dscp_rewrite.h"

namespace {

using namespace twinlane::classifier;

ClassifierConfig fuzz_config(bool vxlan, bool drop) {
    ClassifierConfig config = ClassifierConfig::defaults();
    config.vxlan_inner = vxlan;
    config.malformed_policy = drop ? MalformedPolicy::drop : MalformedPolicy::default_class;
    config.flow_table_capacity = 256;  // small: exercises overflow and ageing
    config.fragment_cache_capacity = 16;
    config.elephant_threshold_bytes = 4096;
    config.elephant_window_ns = 1000;
    config.elephant_quiet_ns = 5000;
    config.reclass_gap_ns = 100;
    Rule rule;
    rule.match.dst_ports = {8000, 8003};
    rule.action = {1, 5, 12};
    config.rules.push_back(rule);
    rule = Rule{};
    rule.match.roce = true;
    rule.match.dest_qp = {3, 1000};
    rule.action.class_id = 0;
    config.rules.push_back(rule);
    return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static Classifier classifiers[4] = {
        Classifier(fuzz_config(false, false)), Classifier(fuzz_config(true, false)),
        Classifier(fuzz_config(false, true)), Classifier(fuzz_config(true, true))};
    static uint64_t now_ns = 0;
    if (size == 0) return 0;
    const uint8_t selector = data[0];
    Classifier& classifier = classifiers[selector & 3];
    const size_t frame_size = size - 1;
    // Exact-size copy so that any read past the frame is an ASan report.
    std::unique_ptr<uint8_t[]> frame(new uint8_t[frame_size]);
    std::copy(data + 1, data + size, frame.get());
    const uint32_t wire = uint32_t(frame_size) + ((selector & 4) ? 100u : 0u);
    now_ns += 1 + (selector >> 4) * 1000;
    const Result result = classifier.classify(frame.get(), uint32_t(frame_size), wire, 0, now_ns);
    if (result.class_id >= classifier.config().class_names.size()) std::abort();
    if (result.malformed == MalformedReason::none && result.ip_version != 0) {
        // The remark path writes into the packet: it must stay inside the parsed header.
        const uint32_t minimum = result.ip_version == 4 ? 20u : 40u;
        if (uint32_t(result.l3_offset) + minimum > frame_size) std::abort();
        if (result.remark_dscp != kNoRemark) {
            rewrite_dscp(frame.get() + result.l3_offset, result.ip_version, result.remark_dscp);
        }
    }
    // The classifier's fast paths must agree with the full parser whenever one accepts a frame.
    const ParserOptions options{2, bool(selector & 1), 4789, 4791};
    SimpleIpv4 simple;
    SimpleIpv6 simple6;
    const bool took_v4 =
        parse_simple_ipv4(frame.get(), uint32_t(frame_size), wire, options, simple);
    const bool took_v6 =
        parse_simple_ipv6(frame.get(), uint32_t(frame_size), wire, options, simple6);
    if (took_v4 || took_v6) {
        ParsedPacket parsed;
        if (took_v4 && took_v6) std::abort();
        if (parse_packet(frame.get(), uint32_t(frame_size), wire, options, parsed) !=
                MalformedReason::none ||
            parsed.fragment != Fragment::none || parsed.vxlan) {
            std::abort();
        }
        if (took_v4 &&
            (parsed.l3_offset != simple.l3_offset || parsed.flow_ip_version != 4 ||
             parsed.vlan_id != simple.vlan_id || parsed.roce != simple.roce ||
             parsed.dest_qp != simple.dest_qp || parsed.flow_dscp != simple.traffic_class >> 2 ||
             parsed.ecn != (simple.traffic_class & 3) || parsed.src_ipv4 != simple.src_ipv4 ||
             parsed.dst_ipv4 != simple.dst_ipv4 || parsed.ip_protocol != simple.ip_protocol ||
             parsed.src_port != simple.src_port || parsed.dst_port != simple.dst_port)) {
            std::abort();
        }
        if (took_v6 &&
            (parsed.l3_offset != simple6.l3_offset || parsed.flow_ip_version != 6 ||
             parsed.ip_version != 6 || uint32_t{simple6.l3_offset} + 40 > frame_size ||
             parsed.vlan_id != simple6.vlan_id || parsed.roce != simple6.roce ||
             parsed.dest_qp != simple6.dest_qp || parsed.flow_dscp != simple6.traffic_class >> 2 ||
             parsed.ecn != (simple6.traffic_class & 3) ||
             std::memcmp(parsed.src_address.data(), frame.get() + simple6.l3_offset + 8, 16) ||
             std::memcmp(parsed.dst_address.data(), frame.get() + simple6.l3_offset + 24, 16) ||
             parsed.ip_protocol != simple6.ip_protocol || parsed.src_port != simple6.src_port ||
             parsed.dst_port != simple6.dst_port)) {
            std::abort();
        }
    }
    const uint8_t* frames[1] = {frame.get()};
    const uint32_t lengths[1] = {uint32_t(frame_size)};
    Result burst_result;
    classifier.classify_burst(frames, lengths, 1, 1, now_ns, &burst_result);
    return 0;
}
