// DPDK telemetry commands: an EAL without hugepages or devices, the /twinlane/... commands
// registered against a FakeDaemonApi, queried over DPDK's own telemetry socket as
// dpdk-telemetry.py does.
#include "control/telemetry.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <rte_eal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "fake_daemon_api.h"

namespace twinlane::control {
namespace {

using nlohmann::json;

class TelemetryTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        prefix_ = "twinlane-telemetry-test-" + std::to_string(getpid());
        const std::string file_prefix = "--file-prefix=" + prefix_;
        std::vector<std::string> args{"telemetry_test",   "--no-huge", "-m", "64",
                                      "--no-pci",         "-l",        "0",  file_prefix,
                                      "--log-level=error"};
        std::vector<char*> argv;
        for (std::string& arg : args)
            argv.push_back(arg.data());
        eal_ok_ = rte_eal_init(static_cast<int>(argv.size()), argv.data()) >= 0;
    }
    static void TearDownTestSuite() {
        unregister_telemetry();
        if (eal_ok_) rte_eal_cleanup();
    }

    // Sends one command on a fresh connection; returns the parsed reply.
    static json query(const std::string& command) {
        const std::string path = std::string(rte_eal_get_runtime_dir()) + "/dpdk_telemetry.v2";
        const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
        if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
            close(fd);
            return json();
        }
        std::vector<char> buffer(1 << 16);
        auto receive = [&]() -> json {
            pollfd pfd{fd, POLLIN, 0};
            if (poll(&pfd, 1, 5000) != 1) return json();
            const ssize_t got = recv(fd, buffer.data(), buffer.size(), 0);
            if (got <= 0) return json();
            return json::parse(std::string(buffer.data(), static_cast<size_t>(got)), nullptr,
                               false);
        };
        receive();  // the server's greeting (version, pid, max_output_len)
        json reply;
        if (send(fd, command.data(), command.size(), 0) == static_cast<ssize_t>(command.size())) {
            reply = receive();
        }
        close(fd);
        return reply;
    }

    static inline std::string prefix_;
    static inline bool eal_ok_ = false;
    testing::FakeDaemonApi api_;
};

TEST_F(TelemetryTest, CommandsAnswerFromTheApi) {
    ASSERT_TRUE(eal_ok_) << "rte_eal_init failed";
    ASSERT_EQ(register_telemetry(api_), "");
    const json status = query("/twinlane/status");
    ASSERT_TRUE(status.is_object()) << status.dump();
    EXPECT_EQ(status["/twinlane/status"]["policy_source"], "fake.yaml");
    EXPECT_EQ(status["/twinlane/status"]["policy_epoch"], 3);

    const json classes = query("/twinlane/stats/classes");
    const json& inference = classes["/twinlane/stats/classes"]["inference"];
    ASSERT_TRUE(inference.is_object()) << classes.dump();
    EXPECT_EQ(inference["classified_packets"], 100);
    EXPECT_EQ(inference["queue_packets_out"], 100) << inference.dump();
    // One level only: nested objects are flattened, deeper ones left out. (A const json's
    // operator[] on a missing key is undefined, so ask contains().)
    EXPECT_FALSE(inference.contains("queue_drops_queue_full_packets")) << inference.dump();

    const json ports = query("/twinlane/stats/ports");
    EXPECT_EQ(ports["/twinlane/stats/ports"]["west"]["rx_packets"], 10) << ports.dump();

    unregister_telemetry();
    const json gone = query("/twinlane/status");
    ASSERT_TRUE(gone.is_object()) << gone.dump();
    EXPECT_FALSE(gone.contains("/twinlane/status") &&
                 gone["/twinlane/status"].contains("policy_source"))
        << gone.dump();
}

// A port that has sent and received pauses for priority 3.
class PfcDaemonApi : public testing::FakeDaemonApi {
  public:
    ApiResult stats(StatsScope scope) override {
        if (scope != StatsScope::ports) return FakeDaemonApi::stats(scope);
        return ApiResult::success(json::array({{{"name", "east-1"},
                                                {"rx_packets", 10},
                                                {"pfc", json::array({{{"priority", 3},
                                                                      {"tx_pause_frames", 4},
                                                                      {"rx_pause_frames", 1},
                                                                      {"storms", 0}}})}}}));
    }
};

TEST_F(TelemetryTest, PfcPerPortAndPriority) {
    ASSERT_TRUE(eal_ok_) << "rte_eal_init failed";
    PfcDaemonApi api;
    ASSERT_EQ(register_telemetry(api), "");
    const json reply = query("/twinlane/stats/pfc");
    ASSERT_TRUE(reply.is_object() && reply.contains("/twinlane/stats/pfc")) << reply.dump();
    const json& east = reply["/twinlane/stats/pfc"]["east_1/3"];
    ASSERT_TRUE(east.is_object()) << reply.dump();
    EXPECT_EQ(east["tx_pause_frames"], 4);
    EXPECT_EQ(east["rx_pause_frames"], 1);
    EXPECT_EQ(east["storms"], 0);
    unregister_telemetry();
}

// A scheduler lcore with its loop and CPU numbers next to the control lcore.
class LcoresDaemonApi : public testing::FakeDaemonApi {
  public:
    ApiResult status() override {
        return ApiResult::success(
            {{"version", "test"},
             {"lcores", json::array({{{"lcore", 0}, {"role", "control"}, {"ports", json::array()}},
                                     {{"lcore", 1},
                                      {"role", "scheduler"},
                                      {"ports", {"west"}},
                                      {"busy_passes", 10},
                                      {"pass_max_ns", 1500},
                                      {"pass_log2_histogram", std::vector<int>(40, 1)},
                                      {"poll_gap_max_ns", 4000},
                                      {"runqueue_wait_ns", 5700},
                                      {"involuntary_switches", 2}}})}});
    }
};

TEST_F(TelemetryTest, LcoresKeyedByLcoreId) {
    ASSERT_TRUE(eal_ok_) << "rte_eal_init failed";
    LcoresDaemonApi api;
    ASSERT_EQ(register_telemetry(api), "");
    const json reply = query("/twinlane/lcores");
    ASSERT_TRUE(reply.is_object() && reply.contains("/twinlane/lcores")) << reply.dump();
    const json& lcores = reply["/twinlane/lcores"];
    ASSERT_TRUE(lcores.contains("0") && lcores.contains("1")) << reply.dump();
    EXPECT_EQ(lcores["0"]["role"], "control");
    EXPECT_FALSE(lcores["0"].contains("busy_passes"));
    const json& sched = lcores["1"];
    EXPECT_EQ(sched["role"], "scheduler");
    EXPECT_EQ(sched["busy_passes"], 10);
    EXPECT_EQ(sched["pass_max_ns"], 1500);
    EXPECT_EQ(sched["poll_gap_max_ns"], 4000);
    EXPECT_EQ(sched["runqueue_wait_ns"], 5700);
    EXPECT_EQ(sched["involuntary_switches"], 2);
    EXPECT_FALSE(sched.contains("pass_log2_histogram")) << sched.dump();  // arrays left out
    unregister_telemetry();
}

}  // namespace
}  // namespace twinlane::control
