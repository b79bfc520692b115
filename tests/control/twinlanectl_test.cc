// twinlanectl against a real control server backed by a PolicyStore (in-process through
// run_twinlanectl, plus the installed binary for exit codes): tables, --json, changes, errors.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <cstdio>
#include <sstream>

#include "control/control_server.h"
#include "control/policy_store.h"
#include "control/twinlanectl.h"
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
        PolicyResult policy = load_policy(std::string(TWINLANE_CONF_DIR) + "/default.yaml");
        ASSERT_TRUE(policy.ok());
        auto created = PolicyStore::create(policy.policy);
        ASSERT_TRUE(created.store);
        store_ = std::move(created.store);
        socket_ = dir_.path() + "/ctl.sock";
        server_ = std::make_unique<ControlServer>(*store_,
                                                  ControlServerOptions{.socket_path = socket_});
        ASSERT_FALSE(server_->start());
    }

    CtlRun run(std::vector<std::string> args) {
        args.insert(args.begin(), {"twinlanectl", "-s", socket_, "--timeout", "5s"});
        std::vector<const char*> argv;
        for (const std::string& arg : args) argv.push_back(arg.c_str());
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
                 "{name: x, priority: 5, match: {dst_port: 9000, proto: tcp}, action: {class: inference}}"});
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
    r = run({"policy", "load", std::string(TWINLANE_CONTROL_TEST_DATA) + "/broken.yaml"});
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
    EXPECT_TRUE(parse_policy(r.out, "shown.yaml").ok()) << r.out;
    r = run({"policy", "show", "--format", "json"});
    EXPECT_EQ(json::parse(r.out)["classes"].size(), 3u);
    const auto saved = spdlog::get_level();
    EXPECT_EQ(run({"log", "level", "debug"}).out, "debug\n");
    EXPECT_EQ(run({"log", "level"}).out, "debug\n");
    spdlog::set_level(saved);
}

TEST_F(TwinlanectlTest, PolicyLoadSendsAnAbsolutePath) {
    const CtlRun r = run({"policy", "load", std::string(TWINLANE_CONF_DIR) + "/mixed-cluster.yaml"});
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

TEST_F(TwinlanectlTest, UsageErrorsExitTwo) {
    EXPECT_EQ(run({"stats", "disks"}).code, kExitUsage);
    EXPECT_EQ(run({"frobnicate"}).code, kExitUsage);
    EXPECT_EQ(run({"--timeout", "soon", "status"}).code, kExitUsage);
    EXPECT_EQ(run({"flows", "--top", "0"}).code, kExitUsage);
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

TEST(TwinlanectlBinary, ExitCodeThreeFromTheInstalledProgram) {
    TempDir dir;
    const std::string command = std::string(TWINLANECTL_PATH) + " -s " + dir.path() +
                                "/none.sock status 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buffer[256];
    while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    const int status = pclose(pipe);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 3);
    EXPECT_NE(output.find("twinlane daemon not running at"), std::string::npos) << output;
}

}  // namespace
}  // namespace twinlane::control
