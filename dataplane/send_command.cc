#include "dataplane/send_command.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "conf/units.h"
#include "dataplane/eal.h"
#include "dataplane/port.h"
#include "dataplane/stop_signal.h"
#include "replay/pcap_io.h"
#include "replay/trace_schedule.h"

namespace twinlane::dataplane {
namespace {

constexpr uint32_t kBurst = 32;
// One mbuf holds one frame; a frame needs data room for its bytes after the headroom.
constexpr uint32_t kMaxFrame = UINT16_MAX - RTE_PKTMBUF_HEADROOM;

struct SendArgs {
    std::string pcap_path;
    std::string port;
    double speed = 1.0;
    std::optional<std::string> link_rate;  // none: no link limit
    uint32_t mbufs = 8191;
    uint32_t link_wait_ms = 10'000;
    uint32_t start_delay_ms = 200;
    uint32_t linger_ms = 100;
    uint32_t max_gap_ms = 1'000;  // a longer jump of the capture's clock waits only this long
    bool json = false;
    std::vector<std::string> eal_args;
};

struct Frame {
    uint64_t timestamp_ns;
    const uint8_t* data;
    uint32_t length;       // captured bytes, sent
    uint32_t wire_length;  // the pcap's length, which the link model serialises
};

// The capture in memory: frames point into the reader's mapping where they outlive the next
// read, else into copies, so the send loop reads no file.
struct Capture {
    std::unique_ptr<replay::PcapReader> reader;
    std::vector<std::vector<uint8_t>> copies;
    std::vector<Frame> frames;
    uint32_t max_length = 0;
    uint64_t bytes = 0;
    uint64_t skipped_empty = 0;
    uint64_t skipped_oversized = 0;
};

bool load(const std::string& path, Capture& capture, std::string& error) {
    try {
        capture.reader = std::make_unique<replay::PcapReader>(path);
        replay::PcapRecord record;
        while (capture.reader->next(record)) {
            const auto length = static_cast<uint32_t>(record.captured.size());
            if (length == 0) {
                ++capture.skipped_empty;
                continue;
            }
            if (length > kMaxFrame) {
                ++capture.skipped_oversized;
                continue;
            }
            const uint8_t* data = record.captured.data();
            if (!capture.reader->record_outlives_next()) {
                capture.copies.emplace_back(record.captured.begin(), record.captured.end());
                data = capture.copies.back().data();
            }
            capture.frames.push_back({record.timestamp_ns, data, length, record.wire_length});
            capture.max_length = std::max(capture.max_length, length);
            capture.bytes += length;
        }
        // Touch every page of the frames now: a page fault in the send loop (the first read
        // of a mapped file's page) would delay the frames behind it.
        uint8_t touched = 0;
        for (const Frame& f : capture.frames)
            for (uint32_t offset = 0; offset < f.length; offset += 4096)
                touched ^= f.data[offset];
        asm volatile("" : : "r"(touched));
        if (!capture.reader->truncated_tail().empty())
            spdlog::warn("{}: {}; sending the {} records before it", path,
                         capture.reader->truncated_tail(), capture.frames.size());
    } catch (const replay::PcapError& e) {
        error = e.what();
        return false;
    }
    if (capture.frames.empty()) {
        error = path + ": no frames to send";
        return false;
    }
    return true;
}

bool wait_for_link(uint16_t port, uint32_t wait_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (!stop_requested()) {
        rte_eth_link link{};
        if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP)
            return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

struct SendCounters {
    uint64_t packets = 0;
    uint64_t bytes = 0;
    uint64_t tx_full_retries = 0;  // tx_burst took less than offered: the device pushed back
    uint64_t mbuf_waits = 0;       // the pool was empty (frames still in the device)
    uint64_t received = 0;         // frames the port received meanwhile, freed
    uint64_t gaps_cut = 0;         // jumps of the capture's clock longer than --max-gap
    uint64_t cut_ns = 0;           // and the time taken out of it
    uint64_t first_due_tsc = 0;    // the sending's start: a late first frame does not shorten it
    uint64_t last_tsc = 0;
    std::vector<uint64_t> lateness_tsc;  // per frame: handed to the device minus due
};

uint32_t drain_rx(uint16_t port) {
    rte_mbuf* in[kBurst];
    const uint16_t n = rte_eth_rx_burst(port, 0, in, kBurst);
    rte_pktmbuf_free_bulk(in, n);
    return n;
}

// Sends every frame of `capture` no earlier than it is due; frames due together leave in one
// burst. A device that pushes back (ring full) delays the frame, which its lateness shows;
// nothing is dropped.
void send_paced(const Capture& capture, uint16_t port, rte_mempool* pool, double speed,
                uint64_t link_bps, uint64_t max_gap_ns, SendCounters& c) {
    const uint64_t hz = rte_get_tsc_hz();
    const std::vector<Frame>& frames = capture.frames;
    std::vector<uint64_t> due(frames.size());
    replay::TraceSchedule schedule(hz, speed, link_bps, max_gap_ns);
    for (size_t i = 0; i < frames.size(); ++i)
        due[i] = schedule.next(frames[i].timestamp_ns, frames[i].wire_length);
    c.gaps_cut = schedule.gaps_cut();
    c.cut_ns = schedule.cut_ns();
    const uint64_t start = rte_rdtsc() + hz / 1000;
    for (uint64_t& d : due)
        d += start;
    if (!due.empty()) c.first_due_tsc = due.front();
    c.lateness_tsc.reserve(frames.size());
    rte_mbuf* burst[kBurst];
    size_t next = 0;
    while (next < frames.size() && !stop_requested()) {
        c.received += drain_rx(port);
        const uint64_t now = rte_rdtsc();
        uint32_t n = 0;
        while (n < kBurst && next + n < frames.size() && due[next + n] <= now)
            ++n;
        if (n == 0) {
            rte_pause();
            continue;
        }
        if (rte_pktmbuf_alloc_bulk(pool, burst, n) != 0) {
            ++c.mbuf_waits;
            continue;
        }
        for (uint32_t i = 0; i < n; ++i) {
            const Frame& f = frames[next + i];
            std::memcpy(rte_pktmbuf_mtod(burst[i], uint8_t*), f.data, f.length);
            burst[i]->data_len = static_cast<uint16_t>(f.length);
            burst[i]->pkt_len = f.length;
        }
        uint32_t sent = 0;
        while (sent < n) {
            sent += rte_eth_tx_burst(port, 0, burst + sent, static_cast<uint16_t>(n - sent));
            if (sent == n) break;
            ++c.tx_full_retries;
            if (stop_requested()) break;
            c.received += drain_rx(port);
        }
        if (sent < n) rte_pktmbuf_free_bulk(burst + sent, n - sent);
        const uint64_t handed = rte_rdtsc();
        c.last_tsc = handed;
        for (uint32_t i = 0; i < sent; ++i) {
            const Frame& f = frames[next + i];
            c.lateness_tsc.push_back(handed - due[next + i]);
            c.bytes += f.length;
        }
        c.packets += sent;
        next += n;
    }
}

double percentile_us(std::vector<uint64_t>& tsc, double q, uint64_t hz) {
    if (tsc.empty()) return 0;
    const size_t rank = std::min(tsc.size() - 1, static_cast<size_t>(q * tsc.size()));
    std::nth_element(tsc.begin(), tsc.begin() + static_cast<std::ptrdiff_t>(rank), tsc.end());
    return static_cast<double>(tsc[rank]) * 1e6 / static_cast<double>(hz);
}

void print_report(const SendArgs& args, const std::string& port, const Capture& capture,
                  SendCounters& c) {
    const uint64_t hz = rte_get_tsc_hz();
    const double trace_s = static_cast<double>(capture.frames.back().timestamp_ns -
                                               std::min(capture.frames.back().timestamp_ns,
                                                        capture.frames.front().timestamp_ns)) /
                           1e9;
    const double sent_s =
        c.packets > 0 ? static_cast<double>(c.last_tsc - c.first_due_tsc) / static_cast<double>(hz)
                      : 0.0;
    const auto gbps = [](uint64_t bytes, double s) {
        return s > 0 ? static_cast<double>(bytes) * 8 / s / 1e9 : 0.0;
    };
    const double p50 = percentile_us(c.lateness_tsc, 0.50, hz);
    const double p99 = percentile_us(c.lateness_tsc, 0.99, hz);
    const double p999 = percentile_us(c.lateness_tsc, 0.999, hz);
    const double max = percentile_us(c.lateness_tsc, 1.0, hz);
    if (args.json) {
        nlohmann::json j = {
            {"pcap", args.pcap_path},
            {"port", port},
            {"speed", args.speed},
            {"link_rate", args.link_rate.value_or("none")},
            {"frames", capture.frames.size()},
            {"trace_s", trace_s},
            {"trace_gbps", gbps(capture.bytes, trace_s / args.speed)},
            {"sent_packets", c.packets},
            {"sent_bytes", c.bytes},
            {"sent_s", sent_s},
            {"sent_gbps", gbps(c.bytes, sent_s)},
            {"lateness_us", {{"p50", p50}, {"p99", p99}, {"p999", p999}, {"max", max}}},
            {"tx_full_retries", c.tx_full_retries},
            {"mbuf_waits", c.mbuf_waits},
            {"received_and_freed", c.received},
            {"gaps_cut", {{"count", c.gaps_cut}, {"seconds", static_cast<double>(c.cut_ns) / 1e9}}},
            {"skipped",
             {{"empty", capture.skipped_empty}, {"oversized", capture.skipped_oversized}}},
        };
        std::printf("%s\n", j.dump().c_str());
        return;
    }
    std::printf("twinlane send: %s -> %s at %gx its recorded timing%s%s\n", args.pcap_path.c_str(),
                port.c_str(), args.speed, args.link_rate ? ", serialised at " : "",
                args.link_rate.value_or("").c_str());
    std::printf("  %-14s %12zu frames %14llu bytes in %.6f s (%.2f Gbit/s at this speed)\n",
                "trace", capture.frames.size(), static_cast<unsigned long long>(capture.bytes),
                trace_s, gbps(capture.bytes, trace_s / args.speed));
    std::printf("  %-14s %12llu frames %14llu bytes in %.6f s from the first due (%.2f Gbit/s)\n",
                "sent", static_cast<unsigned long long>(c.packets),
                static_cast<unsigned long long>(c.bytes), sent_s, gbps(c.bytes, sent_s));
    std::printf("  %-14s p50 %.1f, p99 %.1f, p99.9 %.1f, max %.1f us after the due time\n",
                "handed over", p50, p99, p999, max);
    std::printf(
        "  %-14s %llu TX ring-full retries, %llu waits for mbufs, %llu frames received "
        "and freed\n",
        "device", static_cast<unsigned long long>(c.tx_full_retries),
        static_cast<unsigned long long>(c.mbuf_waits), static_cast<unsigned long long>(c.received));
    if (capture.skipped_empty + capture.skipped_oversized > 0)
        std::printf("  %-14s %llu empty, %llu over %u bytes\n", "skipped",
                    static_cast<unsigned long long>(capture.skipped_empty),
                    static_cast<unsigned long long>(capture.skipped_oversized), kMaxFrame);
    if (c.gaps_cut > 0)
        std::printf("  %-14s %llu jumps of the capture's clock cut to --max-gap %u ms (%.3f s)\n",
                    "gaps cut", static_cast<unsigned long long>(c.gaps_cut), args.max_gap_ms,
                    static_cast<double>(c.cut_ns) / 1e9);
    std::fflush(stdout);
}

int send(const SendArgs& args) {
    uint64_t link_bps = 0;
    if (args.link_rate) {
        auto rate = conf::parse_rate_bits_per_sec(*args.link_rate);
        if (!rate || *rate == 0) {
            spdlog::error("--link-rate {}: {}", *args.link_rate,
                          rate ? std::string("must be above 0 (leave it out for no link limit)")
                               : rate.error());
            return 2;
        }
        link_bps = *rate;
    }
    Capture capture;
    std::string error;
    if (!load(args.pcap_path, capture, error)) {
        spdlog::error("{}", error);
        return 2;
    }
    Eal eal(args.eal_args);
    if (!eal.ok()) {
        spdlog::error("{}", eal.error());
        return 2;
    }
    uint16_t port = 0;
    if (!find_port_or_nth(args.port, 0, port, error)) {
        spdlog::error("{}", error);
        return 2;
    }
    const int socket = rte_eth_dev_socket_id(port);
    const auto room = static_cast<uint16_t>(
        std::max<uint32_t>(capture.max_length, RTE_MBUF_DEFAULT_DATAROOM) + RTE_PKTMBUF_HEADROOM);
    std::unique_ptr<rte_mempool, decltype(&rte_mempool_free)> pool(
        rte_pktmbuf_pool_create("twinlane_send", args.mbufs, 256, 0, room,
                                socket < 0 ? static_cast<int>(rte_socket_id()) : socket),
        &rte_mempool_free);
    if (!pool) {
        spdlog::error("cannot create a pool of {} mbufs of {} bytes: {}", args.mbufs, room,
                      rte_strerror(rte_errno));
        return 2;
    }
    // Fault in every page of the data rooms now (without hugepages they are mapped on first
    // write): a first write in the send loop stalls it.
    rte_mempool_obj_iter(
        pool.get(),
        [](rte_mempool*, void*, void* obj, unsigned) {
            auto* m = static_cast<rte_mbuf*>(obj);
            auto* data = static_cast<volatile uint8_t*>(m->buf_addr);
            for (uint32_t offset = 0; offset < m->buf_len; offset += 4096)
                data[offset] = 0;
        },
        nullptr);
    PortSettings settings;
    settings.mtu =
        std::max<uint32_t>(1500 + RTE_ETHER_HDR_LEN, capture.max_length) - RTE_ETHER_HDR_LEN;
    if (!start_port(port, settings, pool.get(), error)) {
        spdlog::error("{}", error);
        return 2;
    }
    install_stop_handlers();
    const std::string name = port_name(port);
    spdlog::info("port {} started, waiting for its link", name);
    if (!wait_for_link(port, args.link_wait_ms)) {
        if (stop_requested())
            spdlog::error("port {}: stopped by a signal while waiting for its link", name);
        else
            spdlog::error("port {}: link not up after {} ms", name, args.link_wait_ms);
        stop_port(port);
        return 2;
    }
    // A peer's link comes up when its port starts, which can be well before it polls.
    std::this_thread::sleep_for(std::chrono::milliseconds(args.start_delay_ms));
    spdlog::info("sending {} frames of {} on {}", capture.frames.size(), args.pcap_path, name);
    SendCounters counters;
    send_paced(capture, port, pool.get(), args.speed, link_bps,
               uint64_t{args.max_gap_ms} * 1'000'000, counters);
    if (counters.gaps_cut != 0) {
        spdlog::warn(
            "{} jumps of the capture's clock longer than --max-gap {} ms were cut to it "
            "({:.3f} s taken out)",
            counters.gaps_cut, args.max_gap_ms, static_cast<double>(counters.cut_ns) / 1e9);
    }
    // The peer reads what the device still holds (memif's ring, a NIC's TX ring) meanwhile.
    std::this_thread::sleep_for(std::chrono::milliseconds(args.linger_ms));
    stop_port(port);
    print_report(args, name, capture, counters);
    if (counters.packets < capture.frames.size())
        spdlog::warn("stopped after {} of {} frames", counters.packets, capture.frames.size());
    return 0;
}

}  // namespace

void add_send_command(CLI::App& app, const std::vector<std::string>& eal_args, int& exit_code) {
    auto args = std::make_shared<SendArgs>();
    CLI::App* cmd = app.add_subcommand(
        "send",
        "Send a capture on a DPDK port at its recorded timing (the input of a gateway under "
        "test). DPDK EAL arguments follow `--`, e.g.\n"
        "  twinlane send --pcap in.pcap -- --no-huge --no-pci -l 0 "
        "--vdev=net_memif0,role=client,socket=/run/twinlane-memif.sock");
    cmd->add_option("--pcap", args->pcap_path, "Capture to send (pcap or pcapng)")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_option("--port", args->port, "Port by DPDK device name (default: the first port)");
    cmd->add_option("--speed", args->speed,
                    "Multiple of the recorded timing (2: twice as fast, 0.5: half)")
        ->check(CLI::Range(1e-3, 1e3))
        ->capture_default_str();
    cmd->add_option("--link-rate", args->link_rate,
                    "Send no faster than a link of this rate carries the frames (e.g. 25G): "
                    "the capture's timing, serialised as one ingress port would deliver it");
    cmd->add_option("--max-gap", args->max_gap_ms,
                    "A jump of the capture's clock longer than this many ms (an idle hour, a "
                    "clock step, a corrupt record) waits only this long (0: keep every gap)")
        ->check(CLI::Range(0u, 3'600'000u))
        ->capture_default_str();
    cmd->add_option("--mbufs", args->mbufs, "Mbufs in the send pool")
        ->check(CLI::Range(1023u, 1u << 22))
        ->capture_default_str();
    cmd->add_option("--link-wait", args->link_wait_ms, "Wait this many ms for the link to come up")
        ->check(CLI::Range(0u, 600'000u))
        ->capture_default_str();
    cmd->add_option("--start-delay", args->start_delay_ms,
                    "Once the link is up, wait this many ms before the first frame (the peer "
                    "may poll later than its port starts)")
        ->check(CLI::Range(0u, 600'000u))
        ->capture_default_str();
    cmd->add_option("--linger", args->linger_ms,
                    "After the last frame, wait this many ms before closing the port")
        ->check(CLI::Range(0u, 60'000u))
        ->capture_default_str();
    cmd->add_flag("--json", args->json, "Print the report as one JSON object");
    cmd->callback([args, &eal_args, &exit_code]() {
        args->eal_args = eal_args;
        exit_code = send(*args);
    });
}

}  // namespace twinlane::dataplane
