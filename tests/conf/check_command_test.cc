// `twinlane check FILE...`: output and exit codes, directly and through CLI11.
#include "conf/check_command.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace twinlane::conf {
namespace {

const std::string kDefault = std::string(TWINLANE_CONF_DIR) + "/default.yaml";
const std::string kBroken = std::string(TWINLANE_CONF_TEST_DATA) + "/broken.yaml";

TEST(CheckCommand, ValidPolicyPrintsASummary) {
    std::ostringstream out, err;
    EXPECT_EQ(run_check(kDefault, out, err), 0);
    EXPECT_EQ(out.str(), "OK: " + kDefault +
                             ": 2 ports, 3 classes, 6 rules\n"
                             "port 'west': mempool 65535 mbufs (sized to fit; descriptor rings "
                             "2048, queues 53760), about 148 MiB\n"
                             "port 'east': mempool 65535 mbufs (sized to fit; descriptor rings "
                             "2048, queues 53760), about 148 MiB\n");
    EXPECT_EQ(err.str(), "");
}

TEST(CheckCommand, InvalidPolicyPrintsOneErrorPerLine) {
    std::ostringstream out, err;
    EXPECT_EQ(run_check(kBroken, out, err), 1);
    EXPECT_EQ(out.str(), "");
    std::istringstream lines(err.str());
    std::string line;
    int count = 0;
    while (std::getline(lines, line)) {
        ++count;
        EXPECT_EQ(line.rfind(kBroken + ":", 0), 0u) << line;
    }
    EXPECT_EQ(count, 10);
    EXPECT_NE(err.str().find(kBroken + ":8:5: ports[0].rx_queus: unknown key"), std::string::npos);
}

TEST(CheckCommand, MissingFileIsAnError) {
    std::ostringstream out, err;
    EXPECT_EQ(run_check("/nonexistent/policy.yaml", out, err), 1);
    EXPECT_EQ(err.str(),
              "/nonexistent/policy.yaml: cannot read the file: No such file or directory\n");
}

// A per_job node whose 1024 leaves of 2^20 packets each could hold more mbufs than any pool
// (the scheduler's descriptor pool, 2^28, would refuse it at compile): check fails at the port,
// as run would, before anything is allocated.
TEST(CheckCommand, QueuesNoPoolCanHoldFailCheck) {
    const std::string path = ::testing::TempDir() + "/check_compile.yaml";
    std::ofstream(path) << R"(version: 1
ports:
  - {name: a, device: net_null0, rate: 10G}
  - {name: b, device: net_null1, rate: 10G}
forwarding: [{from: a, to: b}, {from: b, to: a}]
classes: [other]
scheduler:
  name: root
  kind: drr
  class: other
  per_job: {count: 1024, leaf: {kind: fifo, limit: {packets: 1048576}}}
classifier: {heuristics: {default_class: other}}
)";
    std::ostringstream out, err;
    EXPECT_EQ(run_check(path, out, err), 1) << out.str();
    EXPECT_EQ(out.str(), "");
    EXPECT_NE(err.str().find(path + ":3:5: ports[0]: this port can hold "), std::string::npos)
        << err.str();
    EXPECT_NE(err.str().find("more than a pool's 16777216"), std::string::npos) << err.str();
}

// A TX budget the root shaper's bucket cannot hold is the loader's to refuse, at file:line.
TEST(CheckCommand, TxBudgetAboveTheBucketIsLocated) {
    const std::string path = ::testing::TempDir() + "/check_budget.yaml";
    std::ofstream(path) << R"(version: 1
ports:
  - {name: a, device: net_null0, rate: 10G, tx_budget: 300MiB}
  - {name: b, device: net_null1, rate: 10G}
forwarding: [{from: a, to: b}, {from: b, to: a}]
classes: [other]
scheduler: {name: root, kind: fifo, class: other}
classifier: {heuristics: {default_class: other}}
)";
    std::ostringstream out, err;
    EXPECT_EQ(run_check(path, out, err), 1) << out.str();
    EXPECT_NE(err.str().find(path + ":3:56: ports[0].tx_budget: tx_budget is 314572800 bytes"),
              std::string::npos)
        << err.str();
}

// A latency target no action can keep (one jumbo frame on the 1G wire lasts longer) is valid,
// with a note that says why it will be missed.
TEST(CheckCommand, ALatencyTargetWithinOneFrameOnTheWireGetsANote) {
    const std::string path = ::testing::TempDir() + "/check_slo_blocking.yaml";
    std::ofstream(path) << R"(version: 1
ports:
  - {name: a, device: net_null0, rate: 1G, mtu: 9000, tx_budget: 20KB}
  - {name: b, device: net_null1, rate: 10G, mtu: 9000}
forwarding: [{from: a, to: b}, {from: b, to: a}]
classes:
  - {name: inference, slo: {p99: 50us, window: 1ms}}
  - other
scheduler:
  name: root
  kind: strict
  children:
    - {name: inference, kind: fifo, class: inference}
    - {name: other, kind: fifo, class: other}
classifier: {heuristics: {default_class: other}}
)";
    std::ostringstream out, err;
    EXPECT_EQ(run_check(path, out, err), 0) << err.str();
    // Port a (1G): 9018 bytes take 72.1 us; port b (10G): 7.2 us, below the target.
    EXPECT_NE(out.str().find("note: port 'a': slo: inference: the p99 target 50.0us is not above "
                             "one 9018-byte frame at 1.00Gbit/s (72.1us)"),
              std::string::npos)
        << out.str();
    EXPECT_EQ(out.str().find("note: port 'b'"), std::string::npos) << out.str();
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    CLI::App app{"twinlane"};
    app.require_subcommand(1);
    add_check_command(app, out, err);
    std::vector<const char*> argv{"twinlane"};
    for (const std::string& arg : args)
        argv.push_back(arg.c_str());
    try {
        app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
        std::ostringstream ignored;
        return app.exit(e, ignored, ignored);
    }
    return 0;
}

TEST(CheckCommand, SubcommandExitCodes) {
    std::ostringstream out, err;
    EXPECT_EQ(run_cli({"check", "-c", kDefault}, out, err), 0);
    EXPECT_NE(out.str().find("OK: "), std::string::npos);

    std::ostringstream out2, err2;
    EXPECT_EQ(run_cli({"check", "--config", kBroken}, out2, err2), 1);
    EXPECT_NE(err2.str().find("ports[1].name: duplicate port name"), std::string::npos);
}

// `twinlane check conf/*.yaml`: files given by position, several at once; each is reported and
// one invalid file fails the run.
TEST(CheckCommand, ChecksEveryFileGivenByPosition) {
    std::ostringstream out, err;
    EXPECT_EQ(run_cli({"check", kDefault}, out, err), 0);
    EXPECT_EQ(out.str().rfind("OK: " + kDefault + ":", 0), 0u) << out.str();

    std::ostringstream out2, err2;
    EXPECT_EQ(run_cli({"check", kBroken, kDefault}, out2, err2), 1);
    EXPECT_NE(out2.str().find("OK: " + kDefault + ":"), std::string::npos) << "checked after";
    EXPECT_NE(err2.str().find(kBroken + ":8:5: ports[0].rx_queus: unknown key"), std::string::npos);

    std::ostringstream out3, err3;
    EXPECT_EQ(run_cli({"check", "-c", kDefault, "-c", kDefault}, out3, err3), 0);
    size_t oks = 0;
    for (size_t at = out3.str().find("OK: "); at != std::string::npos;
         at = out3.str().find("OK: ", at + 1))
        ++oks;
    EXPECT_EQ(oks, 2u);
}

TEST(CheckCommand, ThrowsRuntimeErrorCarryingTheExitCode) {
    std::ostringstream out, err;
    CLI::App app{"twinlane"};
    add_check_command(app, out, err);
    const std::vector<const char*> argv{"twinlane", "check", "-c", kBroken.c_str()};
    try {
        app.parse(static_cast<int>(argv.size()), argv.data());
        FAIL() << "expected CLI::RuntimeError";
    } catch (const CLI::RuntimeError& e) {
        EXPECT_EQ(e.get_exit_code(), 1);
    }
}

TEST(CheckCommand, ConfigOptionIsRequired) {
    std::ostringstream out, err;
    EXPECT_NE(run_cli({"check"}, out, err), 0);
    EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace twinlane::conf
