// OutputFile: nothing appears at the destination before commit(), nothing is left when a run
// gives up, a symlinked destination keeps its link, the replaced file's mode is kept; and
// same_file() sees one file through symlinks and hard links.
#include "replay/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/replay/temp_dir_test.h"

namespace twinlane::replay {
namespace {

class OutputFileTest : public testing::TempDirTest {
  protected:
    static void write(const std::string& file, const std::string& text) {
        std::ofstream(file) << text;
    }
    static std::string read(const std::string& file) {
        std::ifstream in(file);
        return {std::istreambuf_iterator<char>(in), {}};
    }
    // Names in the directory, hidden ones included.
    size_t entries() const {
        return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir_),
                                                 std::filesystem::directory_iterator()));
    }
};

TEST_F(OutputFileTest, TheDestinationAppearsWholeAtCommit) {
    OutputFile file(path("out.pcap"));
    EXPECT_EQ(std::filesystem::path(file.temporary_path()).parent_path(), dir_);
    write(file.temporary_path(), "complete");
    EXPECT_FALSE(std::filesystem::exists(path("out.pcap")));
    file.commit();
    EXPECT_EQ(read(path("out.pcap")), "complete");
    EXPECT_FALSE(std::filesystem::exists(file.temporary_path()));
    EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFileTest, AnUncommittedFileLeavesNothingAndTheOldFileStays) {
    write(path("out.json"), "old report");
    {
        OutputFile file(path("out.json"));
        write(file.temporary_path(), "half a rep");
        EXPECT_EQ(entries(), 2u);
    }
    EXPECT_EQ(read(path("out.json")), "old report");
    EXPECT_EQ(entries(), 1u);
    { OutputFile file(path("new.json")); }
    EXPECT_FALSE(std::filesystem::exists(path("new.json")));
    EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFileTest, ASymlinkedDestinationKeepsItsLinkAndItsTargetIsReplaced) {
    std::filesystem::create_directory(dir_ / "store");
    write(path("store/target.pcap"), "old");
    std::filesystem::create_symlink("store/target.pcap", dir_ / "link.pcap");
    OutputFile file(path("link.pcap"));
    // Beside the target: rename() cannot cross file systems, the link's may differ.
    EXPECT_EQ(std::filesystem::path(file.temporary_path()).parent_path(), dir_ / "store");
    write(file.temporary_path(), "new");
    file.commit();
    EXPECT_TRUE(std::filesystem::is_symlink(path("link.pcap")));
    EXPECT_EQ(read(path("store/target.pcap")), "new");
}

TEST_F(OutputFileTest, TheReplacedFilesModeIsKeptAndANewFileFollowsTheUmask) {
    write(path("private.json"), "x");
    ASSERT_EQ(chmod(path("private.json").c_str(), 0640), 0);
    const mode_t old_mask = umask(027);
    {
        OutputFile file(path("private.json"));
        file.commit();
        OutputFile fresh(path("fresh.json"));
        fresh.commit();
    }
    umask(old_mask);
    struct stat info {};
    ASSERT_EQ(stat(path("private.json").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 07777, 0640u);
    ASSERT_EQ(stat(path("fresh.json").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 07777, 0640u);  // 0666 & ~027
}

TEST_F(OutputFileTest, AnUnwritableDirectoryIsAnErrorNamingThePath) {
    try {
        OutputFile file(path("no-such-dir/out.pcap"));
        FAIL() << "expected OutputError";
    } catch (const OutputError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("no-such-dir/out.pcap"), std::string::npos) << message;
        EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
    }
}

TEST_F(OutputFileTest, AFifoOrADirectoryIsRefusedAndStaysWhatItWas) {
    ASSERT_EQ(mkdir(path("sub").c_str(), 0700), 0);
    // A FIFO stands for any non-regular destination (a device such as /dev/null as root).
    const std::string fifo = path("out.fifo");
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    for (const std::string& target : {fifo, path("sub")}) {
        try {
            OutputFile file(target);
            FAIL() << "expected OutputError for " << target;
        } catch (const OutputError& error) {
            EXPECT_NE(std::string(error.what()).find("not a regular file"), std::string::npos)
                << error.what();
        }
    }
    struct stat st {};
    ASSERT_EQ(stat(fifo.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(OutputFileTest, SameFileSeesThroughSymlinksAndHardLinks) {
    write(path("in.pcap"), "capture");
    write(path("other.pcap"), "capture");
    std::filesystem::create_symlink("in.pcap", dir_ / "soft.pcap");
    std::filesystem::create_hard_link(dir_ / "in.pcap", dir_ / "hard.pcap");
    EXPECT_TRUE(same_file(path("in.pcap"), path("in.pcap")));
    EXPECT_TRUE(same_file(path("soft.pcap"), path("in.pcap")));
    EXPECT_TRUE(same_file(path("hard.pcap"), path("soft.pcap")));
    EXPECT_TRUE(same_file(path("./in.pcap"),
                          dir_.string() + "/../" + dir_.filename().string() + "/in.pcap"));
    EXPECT_FALSE(same_file(path("other.pcap"), path("in.pcap")));
    EXPECT_FALSE(same_file(path("missing.pcap"), path("in.pcap")));
    const int fd = open(path("hard.pcap").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(same_file(path("in.pcap"), fd));
    EXPECT_FALSE(same_file(path("other.pcap"), fd));
    close(fd);
}

}  // namespace
}  // namespace twinlane::replay
