// The `gen` subcommand: option parsing with units, the summary it prints, the file it writes.
#include "replay/gen_command.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "replay/pcap_io.h"
#include "tests/replay/temp_dir_test.h"

namespace twinlane::replay {
namespace {

class GenCommandTest : public testing::TempDirTest {
  protected:
    void SetUp() override {
        TempDirTest::SetUp();
        output_ = (dir_ / "out.pcap").string();
    }

    // Parses argv the way the main binary does; CLI errors propagate to the test.
    void run(std::vector<std::string> args) {
        CLI::App app("twinlane");
        add_gen_command(app, printed_);
        args.insert(args.begin(), "twinlane");
        std::vector<const char*> argv;
        for (const auto& arg : args)
            argv.push_back(arg.c_str());
        app.parse(static_cast<int>(argv.size()), argv.data());
    }

    std::string output_;
    std::ostringstream printed_;
};

TEST_F(GenCommandTest, WritesTheTraceAndPrintsPerClassRates) {
    run({"gen",    "-o",
         output_,  "--link-rate",
         "25Gbps", "--duration",
         "4ms",    "--training-load",
         "0.5",    "--inference-load",
         "0.2",    "--other-load",
         "0.1",    "--jobs",
         "2",      "--flows-per-job",
         "3",      "--clients",
         "8",      "--seed",
         "7",      "--ipv6-fraction",
         "0.25"});
    const std::string text = printed_.str();
    for (const char* word : {"training", "inference", "other", "total", "job1", "Gb/s"}) {
        EXPECT_NE(text.find(word), std::string::npos) << word;
    }
    // 25 Gb/s * 0.5 = 12.5 Gb/s of training, printed with three decimals.
    EXPECT_NE(text.find("12.5"), std::string::npos) << text;
    EXPECT_NE(text.find("25.000 Gb/s"), std::string::npos) << text;
    PcapReader reader(output_);
    PcapRecord record;
    uint64_t packets = 0;
    while (reader.next(record))
        ++packets;
    EXPECT_GT(packets, 100U);
    EXPECT_NE(text.find("wrote " + std::to_string(packets) + " packets"), std::string::npos);
}

TEST_F(GenCommandTest, PlainBitsPerSecondAndMicrosecondsAreAccepted) {
    run({"gen", "-o", output_, "--link-rate", "400000000", "--duration", "3000us"});
    EXPECT_NE(printed_.str().find("0.400 Gb/s"), std::string::npos) << printed_.str();
    EXPECT_NE(printed_.str().find("3.000 ms"), std::string::npos) << printed_.str();
}

TEST_F(GenCommandTest, BadUnitsFailValidation) {
    EXPECT_THROW(run({"gen", "-o", output_, "--link-rate", "10GBps"}), CLI::ValidationError);
    EXPECT_THROW(run({"gen", "-o", output_, "--duration", "50parsecs"}), CLI::ValidationError);
    EXPECT_THROW(run({"gen", "-o", output_, "--ipv6-fraction", "2"}), CLI::ValidationError);
    for (const char* seed :
         {"-1", "18446744073709551616", "99999999999999999999999", "0x10", "1e3"})
        EXPECT_THROW(run({"gen", "-o", output_, "--seed", seed}), CLI::ValidationError) << seed;
    EXPECT_FALSE(std::filesystem::exists(output_));
}

TEST_F(GenCommandTest, TooManyClientsForTheLoadAreNamed) {
    run({"gen", "-o", output_, "--duration", "5ms", "--clients", "4000"});
    EXPECT_NE(printed_.str().find("note: 4000 inference clients share 78 B each"),
              std::string::npos)
        << printed_.str();
    printed_.str("");
    run({"gen", "-o", output_, "--duration", "5ms"});
    EXPECT_EQ(printed_.str().find("note:"), std::string::npos) << printed_.str();
}

TEST_F(GenCommandTest, OutputIsRequired) {
    EXPECT_THROW(run({"gen", "--duration", "5ms"}), CLI::RequiredError);
}

TEST_F(GenCommandTest, TooShortDurationIsAValidationError) {
    EXPECT_THROW(run({"gen", "-o", output_, "--duration", "1ms"}), CLI::ValidationError);
}

TEST_F(GenCommandTest, UnwritableOutputIsARuntimeError) {
    EXPECT_THROW(run({"gen", "-o", (dir_ / "missing" / "x.pcap").string(), "--duration", "2ms"}),
                 CLI::RuntimeError);
}

}  // namespace
}  // namespace twinlane::replay
