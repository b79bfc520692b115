// twinlanectl against a real control server backed by a PolicyStore (in-process through
// run_twinlanectl, plus the installed binary for exit codes): tables, --json, changes, errors.
#include "control/twinlanectl.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>

#include "conf/load_policy.h"
#include "control/control_server.h"
#include "control/policy_store.h"
#include "control/stats_json.h"
#include "fake_daemon_api.h"
#include "socket_test_util.h"

namespace twinlane::control {
namespace {

using nlohmann::json;
using testing::TempDir;

struct CtlRun {
    int code = -1;
    std::string out;
    std::string err;
};

class TwinlanectlTest : public ::testing::Test {
  protected:
    void SetUp() override {
        conf::PolicyResult policy =
            conf::load_policy(std::string(TWINLANE_CONF_DIR) + "/default.yaml");
        ASSERT_TRUE(policy.ok());
        auto created = PolicyStore::create(policy.policy);
        ASSERT_TRUE(created.store);
        store_ = std::move(created.store);
        socket_ = dir_.path() + "/ctl.sock";
        server_ =
            std::make_unique<ControlServer>(*store_, ControlServerOptions{.socket_path = socket_});
        ASSERT_FALSE(server_->start());
    }

    CtlRun run(std::vector<std::string> args) {
        args.insert(args.begin(), {"twinlanectl", "-s", socket_, "--timeout", "5s"});
        std::vector<const char*> argv;
        for (const std::string& arg : args)
            argv.push_back(arg.c_str());
        std::ostringstream out, err;
        CtlRun result;
        result.code = run_twinlanectl(static_cast<int>(argv.size()), argv.data(), out, err);
        result.out = out.str();
        result.err = err.str();
        return result;
    }

    TempDir dir_;
    std::string socket_;
    std::unique_ptr<PolicyStore> store_;
    std::unique_ptr<ControlServer> server_;
};

TEST_F(TwinlanectlTest, StatusTable) {
    const CtlRun r = run({"status"});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    EXPECT_NE(r.out.find("policy"), std::string::npos);
    EXPECT_NE(r.out.find("PORT"), std::string::npos);
    EXPECT_NE(r.out.find("west"), std::string::npos);
    EXPECT_NE(r.out.find("net_null1"), std::string::npos);
}

// A daemon's status carries its classifiers' counters: twinlanectl prints malformed packets by
// reason (those seen only) and the flow table's and heuristics' counts.
class ClassifierStatusApi : public testing::FakeDaemonApi {
  public:
    ApiResult status() override {
        ApiResult base = FakeDaemonApi::status();
        nlohmann::json out = base.value();
        classifier::ClassifierCounters c;
        c.malformed[size_t(classifier::MalformedReason::ipv4_truncated)] = 7;
        c.malformed[size_t(classifier::MalformedReason::l4_truncated)] = 2;
        c.flow_inserts = 40;
        c.flow_overflows = 3;
        c.fragments_followed = 5;
        c.fragments_unmatched = 1;
        c.elephants_detected = 2;
        c.reclassifications = 4;
        out["classifier"] = classifier_counters_to_json(c);
        return ApiResult::success(std::move(out));
    }
};

TEST(TwinlanectlStatus, PrintsTheClassifiersCounters) {
    TempDir dir;
    ClassifierStatusApi api;
    const std::string socket = dir.path() + "/ctl.sock";
    ControlServer server(api, ControlServerOptions{.socket_path = socket});
    ASSERT_FALSE(server.start());
    const std::vector<const char*> argv{"twinlanectl", "-s", socket.c_str(), "status"};
    std::ostringstream out, err;
    ASSERT_EQ(run_twinlanectl(static_cast<int>(argv.size()), argv.data(), out, err), kExitOk)
        << err.str();
    EXPECT_NE(out.str().find("classifier: 40 flows inserted, 3 not cached (table full), 6 later "
                             "fragments (1 unmatched), 2 elephants, 4 reclassifications\n"),
              std::string::npos)
        << out.str();
    EXPECT_NE(out.str().find("malformed: 9 (ipv4_truncated 7, l4_truncated 2)\n"),
              std::string::npos)
        << out.str();
}

TEST_F(TwinlanectlTest, JsonOutputIsTheRawResult) {
    const CtlRun r = run({"--json", "stats", "queues"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    const json result = json::parse(r.out);
    ASSERT_TRUE(result.is_array());
    EXPECT_EQ(result[0]["node"], "root");
    const CtlRun classes = run({"-j", "stats"});
    EXPECT_EQ(json::parse(classes.out).size(), 3u);
}

TEST_F(TwinlanectlTest, TablesForEveryStatsScope) {
    for (const char* scope : {"ports", "classes", "queues"}) {
        const CtlRun r = run({"stats", scope});
        EXPECT_EQ(r.code, kExitOk) << scope << r.err;
        EXPECT_GE(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;
    }
    EXPECT_EQ(run({"flows", "--top", "5"}).code, kExitOk);
}

TEST_F(TwinlanectlTest, RulesAddListDelete) {
    CtlRun r = run({"rules", "add",
                    "{name: x, priority: 5, match: {dst_port: 9000, proto: tcp}, action: {class: "
                    "inference}}"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_NE(r.out.find("epoch 2"), std::string::npos) << r.out;
    r = run({"rules", "list"});
    EXPECT_NE(r.out.find("x"), std::string::npos);
    EXPECT_NE(r.out.find("9000"), std::string::npos);
    r = run({"rules", "del", "x"});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(store_->epoch(), 3u);
}

TEST_F(TwinlanectlTest, RefusedChangesExitOneWithTheReasons) {
    CtlRun r = run({"rules", "add",
                    "{name: y, priority: 10, match: {dst_port: 1}, action: {class: inference}}"});
    EXPECT_EQ(r.code, kExitRefused);
    EXPECT_NE(r.err.find("already used by rule 'grpc-serving'"), std::string::npos) << r.err;
    r = run({"class", "set", "inference", "rate", "20G"});
    EXPECT_EQ(r.code, kExitRefused);
    EXPECT_NE(r.err.find("above"), std::string::npos) << r.err;
    r = run({"policy", "load", std::string(TWINLANE_CONF_TEST_DATA) + "/broken.yaml"});
    EXPECT_EQ(r.code, kExitRefused);
    EXPECT_NE(r.err.find("broken.yaml:"), std::string::npos) << r.err;
    EXPECT_EQ(store_->epoch(), 1u);
    // --json prints the failed reply too.
    r = run({"-j", "rules", "del", "nosuch"});
    EXPECT_EQ(r.code, kExitRefused);
    EXPECT_EQ(json::parse(r.out)["ok"], false);
}

TEST_F(TwinlanectlTest, ClassSetPolicyShowLogLevel) {
    CtlRun r = run({"class", "set", "training", "rate", "8G"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    r = run({"policy", "show"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_NE(r.out.find("8Gbps"), std::string::npos);
    // The YAML shown is a valid policy.
    EXPECT_TRUE(conf::parse_policy(r.out, "shown.yaml").ok()) << r.out;
    r = run({"policy", "show", "--format", "json"});
    EXPECT_EQ(json::parse(r.out)["classes"].size(), 3u);
    const auto saved = spdlog::get_level();
    EXPECT_EQ(run({"log", "level", "debug"}).out, "debug\n");
    EXPECT_EQ(run({"log", "level"}).out, "debug\n");
    spdlog::set_level(saved);
}

TEST_F(TwinlanectlTest, PolicyLoadSendsAnAbsolutePath) {
    const CtlRun r =
        run({"policy", "load", std::string(TWINLANE_CONF_DIR) + "/mixed-cluster.yaml"});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(store_->epoch(), 2u);
}

TEST_F(TwinlanectlTest, WatchIsBoundedByCount) {
    const CtlRun r = run({"watch", "--interval", "10ms", "--count", "3"});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), 'C') >= 3, true);
    size_t headers = 0;
    for (size_t at = r.out.find("CLASS"); at != std::string::npos; at = r.out.find("CLASS", at + 1))
        ++headers;
    EXPECT_EQ(headers, 3u);
    EXPECT_NE(r.out.find("OUT RATE"), std::string::npos);
    const CtlRun j = run({"-j", "watch", "--interval", "10ms", "--count", "2"});
    EXPECT_EQ(std::count(j.out.begin(), j.out.end(), '\n'), 2);
}

// watch rides out a daemon restart: it says it waits, polls on, and shows the new daemon.
TEST_F(TwinlanectlTest, WatchWaitsOutADaemonRestart) {
    CtlRun r;
    std::thread watcher([&] { r = run({"watch", "--interval", "20ms", "--count", "40"}); });
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    server_->stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    server_ =
        std::make_unique<ControlServer>(*store_, ControlServerOptions{.socket_path = socket_});
    ASSERT_FALSE(server_->start());
    watcher.join();
    EXPECT_EQ(r.code, kExitOk) << r.err;
    const size_t waiting = r.err.find("watch: waiting for the daemon at " + socket_);
    ASSERT_NE(waiting, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("waiting", r.err.find('\n', waiting)), std::string::npos)
        << "said once: " << r.err;
    EXPECT_NE(r.err.find("watch: the daemon answers again"), std::string::npos) << r.err;
    size_t tables = 0;
    for (size_t at = r.out.find("CLASS"); at != std::string::npos; at = r.out.find("CLASS", at + 1))
        ++tables;
    EXPECT_GT(tables, 10u);  // before and after the outage
    EXPECT_LT(tables, 40u);  // not during it
}

// Before the daemon has answered once, watch does not wait: a wrong socket path is said at once.
TEST(TwinlanectlNotRunning, WatchGivesUpAtOnceOnAnAbsentDaemon) {
    TempDir dir;
    const std::string socket = dir.path() + "/none.sock";
    const char* argv[] = {"twinlanectl", "-s", socket.c_str(), "watch", "--interval", "10ms"};
    std::ostringstream out, err;
    EXPECT_EQ(run_twinlanectl(6, argv, out, err), kExitNotRunning);
    EXPECT_EQ(err.str().find("waiting"), std::string::npos) << err.str();
}

TEST_F(TwinlanectlTest, UsageErrorsExitTwo) {
    EXPECT_EQ(run({"stats", "disks"}).code, kExitUsage);
    EXPECT_EQ(run({"frobnicate"}).code, kExitUsage);
    EXPECT_EQ(run({"--timeout", "soon", "status"}).code, kExitUsage);
    EXPECT_EQ(run({"flows", "--top", "0"}).code, kExitUsage);
    // A negative count wrapped to a huge unsigned one and watched forever.
    EXPECT_EQ(run({"watch", "--interval", "10ms", "--count", "-1"}).code, kExitUsage);
    EXPECT_EQ(run({"watch", "--interval", "10ms", "--count=-1"}).code, kExitUsage);
    EXPECT_EQ(run({"flows", "--top", "-1"}).code, kExitUsage);
    EXPECT_EQ(run({"watch", "--interval", "0.001", "--count", "1"}).code, kExitUsage)
        << "1 ms: below the 10 ms floor";
}

// Time options take a duration or, as `watch -n` does, a bare number of seconds.
TEST_F(TwinlanectlTest, BareNumbersAreSeconds) {
    EXPECT_EQ(run({"watch", "--interval", "0.01", "--count", "2"}).code, kExitOk);
    const std::vector<const char*> argv{"twinlanectl", "-s", socket_.c_str(),
                                        "--timeout",   "2",  "status"};
    std::ostringstream out, err;
    EXPECT_EQ(run_twinlanectl(static_cast<int>(argv.size()), argv.data(), out, err), kExitOk)
        << err.str();
}

TEST(TwinlanectlNotRunning, ExitsThreeWithAClearMessage) {
    TempDir dir;
    const std::string socket = dir.path() + "/none.sock";
    const char* argv[] = {"twinlanectl", "-s", socket.c_str(), "status"};
    std::ostringstream out, err;
    EXPECT_EQ(run_twinlanectl(4, argv, out, err), kExitNotRunning);
    EXPECT_EQ(err.str(), "twinlane daemon not running at " + socket +
                             " (connect: No such file or directory)\n");
}

// Serves one connection at `socket`: reads a request line and answers `reply` (id 1).
class OneReplyServer {
  public:
    OneReplyServer(const std::string& socket, std::string reply) {
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, socket.c_str(), sizeof(address.sun_path) - 1);
        EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        EXPECT_EQ(listen(fd_, 1), 0);
        thread_ = std::thread([this, reply = std::move(reply)] {
            const int client = accept(fd_, nullptr, nullptr);
            if (client < 0) return;
            char request[4096];
            if (recv(client, request, sizeof request, 0) > 0) {
                EXPECT_EQ(send(client, reply.data(), reply.size(), MSG_NOSIGNAL),
                          static_cast<ssize_t>(reply.size()));
            }
            close(client);
        });
    }
    ~OneReplyServer() {
        shutdown(fd_, SHUT_RDWR);  // wakes accept() if nobody came
        thread_.join();
        close(fd_);
    }

  private:
    int fd_ = -1;
    std::thread thread_;
};

TEST(TwinlanectlBadReply, JsonOfTheWrongShapeIsABadReplyNotACrash) {
    // A reply of another daemon version (or not twinlane at all) used to abort twinlanectl
    // with an uncaught nlohmann::json::type_error (exit 134).
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"status"}, R"({"version":1,"id":1,"ok":true})"},
        {{"status"},
         R"({"version":1,"id":1,"ok":true,"result":{"version":5,"ports":7,"lcores":null}})"},
        {{"status"}, R"({"version":1,"id":1,"ok":"yes","result":{}})"},
        {{"rules", "list"}, R"({"version":1,"id":1,"ok":true,"result":{"a":3}})"},
        {{"policy", "show"}, R"({"version":1,"id":1,"ok":true,"result":"document"})"},
        {{"watch", "--count", "1"}, R"({"version":1,"id":1,"ok":true,"result":{"a":1}})"},
    };
    for (const auto& [command, reply] : cases) {
        TempDir dir;
        const std::string socket = dir.path() + "/fake.sock";
        OneReplyServer server(socket, reply + "\n");
        std::vector<std::string> args{"twinlanectl", "-s", socket, "--timeout", "2s"};
        args.insert(args.end(), command.begin(), command.end());
        std::vector<const char*> argv;
        for (const std::string& arg : args)
            argv.push_back(arg.c_str());
        std::ostringstream out, err;
        const int code = run_twinlanectl(static_cast<int>(argv.size()), argv.data(), out, err);
        EXPECT_EQ(code, kExitTransport) << reply << "\n" << err.str();
        EXPECT_NE(err.str().find(": the daemon sent a malformed reply ("), std::string::npos)
            << reply << "\n"
            << err.str();
    }
}

// `twinlanectl stats SCOPE` against a fake daemon that answers `reply`: its table (exit 0
// expected).
std::string stats_table(const std::string& reply, const char* scope) {
    TempDir dir;
    const std::string socket = dir.path() + "/fake.sock";
    OneReplyServer server(socket, reply);
    const std::vector<const char*> argv{"twinlanectl", "-s",    socket.c_str(), "--timeout",
                                        "2s",          "stats", scope};
    std::ostringstream out, err;
    EXPECT_EQ(run_twinlanectl(static_cast<int>(argv.size()), argv.data(), out, err), kExitOk)
        << err.str();
    return out.str();
}

TEST(TwinlanectlSloTable, TheCapShowsTheFloorItsControllerKeepsUnderIt) {
    const std::string slo = R"("objective":{"percentile":"p99","target_ns":50000,)"
                            R"("window_ns":1000000,"actions":["adapt_cap"]},)"
                            R"("windows_met":9,"windows_missed":1,"cap_changes":4,)"
                            R"("downgraded_flows":0,"downgrades":0,"downgraded_bytes":0)";
    for (const auto& [floor, shown] : std::vector<std::pair<std::string, std::string>>{
             {"2000000000", "2.50 Gbps (floor 2.00 Gbps)"}, {"0", "2.50 Gbps "}}) {
        const std::string reply =
            R"({"version":1,"id":1,"ok":true,"result":[{"name":"inference","class_id":0,)"
            R"("slo":[{"port":"out",)" +
            slo + R"(,"cap_bits_per_sec":2500000000,"cap_floor_bits_per_sec":)" + floor + "}]}]}\n";
        const std::string out = stats_table(reply, "classes");
        EXPECT_NE(out.find(shown), std::string::npos) << out;
        if (floor == "0") {
            EXPECT_EQ(out.find("floor"), std::string::npos) << out;
        }
    }
}

TEST(TwinlanectlPortsTable, ShowsHowLongEachPortWasLinkBound) {
    const std::string out = stats_table(
        R"({"version":1,"id":1,"ok":true,"result":[{"name":"east","port_id":1,"rx_packets":5,)"
        R"("rx_bytes":500,"tx_packets":4,"tx_bytes":400,"rx_dropped":0,"tx_dropped":1,)"
        R"("rx_bits_per_sec":0,"tx_bits_per_sec":0,"tx_link_bound_ns":12345600000}]})"
        "\n",
        "ports");
    EXPECT_NE(out.find("LINK-BOUND"), std::string::npos) << out;
    EXPECT_NE(out.find("12.346 s"), std::string::npos) << out;
}

TEST(TwinlanectlBinary, ExitCodeThreeFromTheInstalledProgram) {
    TempDir dir;
    const std::string command =
        std::string(TWINLANECTL_PATH) + " -s " + dir.path() + "/none.sock status 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buffer[256];
    while (fgets(buffer, sizeof buffer, pipe) != nullptr)
        output += buffer;
    const int status = pclose(pipe);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 3);
    EXPECT_NE(output.find("twinlane daemon not running at"), std::string::npos) << output;
}

}  // namespace
}  // namespace twinlane::control
