#include "dataplane/port.h"

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

namespace twinlane::dataplane {
namespace {
std::string describe(uint16_t port_id, const char* step, int rc) {
    return "port " + port_name(port_id) + ": " + step + " failed: " + rte_strerror(-rc);
}

// Whether the port's device string (e.g. "net_pcap0,rx_pcap=in.pcap,infinite_rx=1") carries
// `argument`.
bool has_device_argument(const rte_eth_dev_info& info, std::string_view argument) {
    if (info.device == nullptr) return false;
    const rte_devargs* devargs = rte_dev_devargs(info.device);
    return devargs != nullptr && devargs->args != nullptr &&
           std::string_view(devargs->args).find(argument) != std::string_view::npos;
}
}  // namespace

std::string port_name(uint16_t port_id) {
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    if (rte_eth_dev_get_name_by_port(port_id, name) != 0) return "#" + std::to_string(port_id);
    return name;
}

bool find_port(const std::string& device_name, uint16_t& port_id, std::string& error) {
    if (rte_eth_dev_get_port_by_name(device_name.c_str(), &port_id) == 0) return true;
    error = "no DPDK port named '" + device_name + "' (available:";
    uint16_t id = 0;
    RTE_ETH_FOREACH_DEV(id) {
        error += " " + port_name(id);
    }
    error +=
        rte_eth_dev_count_avail() == 0 ? " none; pass devices after --, e.g. --vdev=...)" : ")";
    return false;
}

bool find_port_or_nth(const std::string& device_name, uint16_t n, uint16_t& port_id,
                      std::string& error) {
    if (!device_name.empty()) return find_port(device_name, port_id, error);
    uint16_t index = 0;
    uint16_t id = 0;
    RTE_ETH_FOREACH_DEV(id) {
        if (index++ == n) {
            port_id = id;
            return true;
        }
    }
    error = "need at least " + std::to_string(n + 1) + " DPDK port(s) (found " +
            std::to_string(rte_eth_dev_count_avail()) +
            "); pass devices after --, e.g. --vdev=net_pcap0,rx_pcap=in.pcap "
            "--vdev=net_pcap1,tx_pcap=out.pcap";
    return false;
}

bool start_port(uint16_t port_id, const PortSettings& settings, rte_mempool* pool,
                std::string& error) {
    rte_eth_dev_info info{};
    int rc = rte_eth_dev_info_get(port_id, &info);
    if (rc != 0) {
        error = describe(port_id, "device info", rc);
        return false;
    }
    rte_eth_conf conf{};
    const uint32_t frame_len = settings.mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
    const uint32_t buf_len = rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM;
    if (frame_len > buf_len && (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER))
        conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
    if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    // DPDK 22.11's net_pcap stamps every frame (in microseconds) without offering the offload;
    // later versions offer it and stamp in nanoseconds (rx_timestamp_unit_ns).
    if (settings.rx_timestamps && (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP))
        conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;

    // The lcores poll every RX queue the policy names: one the device does not have would be
    // polled unconfigured (a PMD crash). Only TX queue 0 is used, so fewer TX queues do no harm.
    if (settings.rx_queues > info.max_rx_queues) {
        error = "rx_queues " + std::to_string(settings.rx_queues) + ": the device has at most " +
                std::to_string(info.max_rx_queues) + " RX queue(s)" +
                (info.driver_name != nullptr && std::string_view(info.driver_name) == "net_pcap"
                     ? " (net_pcap: one per rx_pcap or rx_iface argument)"
                     : "");
        return false;
    }
    const uint16_t rxq = settings.rx_queues;
    const uint16_t txq = std::min<uint16_t>(settings.tx_queues, info.max_tx_queues);
    if (rxq > 1) {  // RSS spreads flows over the RX queues (and so over RX lcores)
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf =
            (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
    }
    rc = rte_eth_dev_configure(port_id, rxq, txq, &conf);
    if (rc != 0) {
        error = describe(port_id, "configure", rc);
        return false;
    }
    // Virtual devices often refuse MTU changes; only a mismatch that matters is an error.
    if (settings.mtu != 1500) {
        rc = rte_eth_dev_set_mtu(port_id, static_cast<uint16_t>(settings.mtu));
        if (rc != 0 && rc != -ENOTSUP) {
            error = describe(port_id, "set MTU", rc);
            return false;
        }
    }
    uint16_t nb_rxd = settings.rx_descriptors;
    uint16_t nb_txd = settings.tx_descriptors;
    rc = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rxd, &nb_txd);
    if (rc != 0) {
        error = describe(port_id, "descriptor count", rc);
        return false;
    }
    const int socket = rte_eth_dev_socket_id(port_id);
    const unsigned socket_id = socket < 0 ? 0 : static_cast<unsigned>(socket);
    for (uint16_t q = 0; q < rxq; ++q) {
        rc = rte_eth_rx_queue_setup(port_id, q, nb_rxd, socket_id, nullptr, pool);
        if (rc != 0) {
            error = describe(port_id, "RX queue setup", rc);
            // net_pcap refuses it (EINVAL, after its own log line) when infinite_rx=1 meets a
            // frame that needs more than one mbuf: it loops single-segment mbufs only.
            if (rc == -EINVAL && has_device_argument(info, "infinite_rx=1"))
                error += " (with infinite_rx=1, net_pcap loops only frames that fit one mbuf, " +
                         std::to_string(buf_len) + " bytes: the capture holds a larger one)";
            return false;
        }
    }
    for (uint16_t q = 0; q < txq; ++q) {
        rc = rte_eth_tx_queue_setup(port_id, q, nb_txd, socket_id, nullptr);
        if (rc != 0) {
            error = describe(port_id, "TX queue setup", rc);
            return false;
        }
    }
    rc = rte_eth_dev_start(port_id);
    if (rc != 0) {
        error = describe(port_id, "start", rc);
        return false;
    }
    rte_eth_promiscuous_enable(port_id);  // a gateway forwards frames for other hosts
    return true;
}

uint64_t rx_timestamp_unit_ns(uint16_t port_id) {
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port_id, &info) != 0) return 1;
    return (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP) != 0 ? 1 : 1000;
}

void stop_port(uint16_t port_id) {
    rte_eth_dev_stop(port_id);
    rte_eth_dev_close(port_id);
}

}  // namespace twinlane::dataplane
