// Writes the fuzzer's seed corpus: one file per header combination the parser knows, each
// prefixed with the harness's option byte (see fuzz_classify.cc). Usage: make_corpus <dir>.
#include <cstdio>
#include <string>
#include <vector>

#include "tests/classifier/packet_builder.h"

using twinlane::classifier::testing::ipv6;
using twinlane::classifier::testing::PacketBuilder;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
        return 2;
    }
    struct Seed {
        const char* name;
        uint8_t options;  // bit 0: VXLAN inner, bit 1: drop policy, bit 2: headers-only buffer
        std::vector<uint8_t> frame;
    };
    const std::vector<Seed> seeds = {
        {"ipv4_tcp", 0,
         PacketBuilder().ethernet().ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 6, 2).tcp(1, 8001).build()},
        {"ipv4_opts_udp", 0,
         PacketBuilder()
             .ethernet()
             .ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 17, 0, 8)
             .udp(1, 2)
             .payload(8)
             .build()},
        {"qinq_icmp", 2,
         PacketBuilder()
             .ethernet()
             .vlan(1, 0x88A8)
             .vlan(2)
             .ipv4({1, 2, 3, 4}, {5, 6, 7, 8}, 1)
             .icmp(8, 0)
             .build()},
        {"ipv4_frag_first", 0,
         PacketBuilder()
             .ethernet()
             .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 17, 0, 0, 9, 0, true)
             .udp(1, 8000)
             .payload(16)
             .build()},
        {"ipv4_frag_later", 0,
         PacketBuilder()
             .ethernet()
             .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 17, 0, 0, 9, 3)
             .payload(16)
             .build()},
        {"ipv4_roce", 0,
         PacketBuilder()
             .ethernet()
             .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 17, 106)
             .udp(4000, 4791)
             .bth(10, 77)
             .payload(8)
             .build()},
        {"ipv6_tcp", 4,
         PacketBuilder().ethernet().ipv6(ipv6(1, 1), ipv6(1, 2), 6, 1).tcp(1, 50051).build()},
        {"ipv6_ext", 0,
         PacketBuilder()
             .ethernet()
             .ipv6(ipv6(1, 1), ipv6(1, 2), 0)
             .ipv6_option_header(43)
             .ipv6_option_header(51)
             .ipv6_ah(60)
             .ipv6_option_header(44)
             .ipv6_fragment(17, 0, true, 5)
             .udp(1, 2)
             .build()},
        {"ipv6_frag_later", 0,
         PacketBuilder()
             .ethernet()
             .ipv6(ipv6(1, 1), ipv6(1, 2), 44)
             .ipv6_fragment(6, 8, false, 5)
             .payload(16)
             .build()},
        {"ipv6_icmp", 0,
         PacketBuilder().ethernet().ipv6(ipv6(1, 1), ipv6(1, 2), 58).icmp(128, 0).build()},
        {"vxlan_tcp", 1,
         PacketBuilder()
             .ethernet()
             .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 17, 2)
             .udp(1, 4789)
             .vxlan(7)
             .ethernet()
             .vlan(3)
             .ipv4({3, 3, 3, 3}, {4, 4, 4, 4}, 6)
             .tcp(1, 8080)
             .build()},
        {"vxlan_v6_roce", 1,
         PacketBuilder()
             .ethernet()
             .ipv6(ipv6(1, 1), ipv6(1, 2), 17)
             .udp(1, 4789)
             .vxlan(7)
             .ethernet()
             .ipv6(ipv6(2, 1), ipv6(2, 2), 17)
             .udp(1, 4791)
             .bth(4, 500)
             .build()},
        {"arp", 0, PacketBuilder().ethernet(0x0806).payload(28).build()},
    };
    for (const Seed& seed : seeds) {
        const std::string path = std::string(argv[1]) + "/" + seed.name;
        std::FILE* file = std::fopen(path.c_str(), "wb");
        if (file == nullptr) {
            std::perror(path.c_str());
            return 1;
        }
        std::fputc(seed.options, file);
        std::fwrite(seed.frame.data(), 1, seed.frame.size(), file);
        std::fclose(file);
    }
    return 0;
}
