// OutputFile: an output written under a temporary name beside its destination and renamed over
// it by commit(), so that a run that fails (or an input that is the output) never leaves a
// truncated or partial file where a complete one was expected. Not committed, the temporary
// file is removed by the destructor.
//
// The temporary file is `.NAME.XXXXXX` in the destination's directory (rename() does not cross
// file systems); a destination that is a symlink is resolved first, so the link stays and its
// target is replaced. The new file gets the mode of the file it replaces, or 0666 minus the
// umask for a new one, as open(O_CREAT) would give. An existing destination that is not a
// regular file (a device such as /dev/null, a FIFO, a socket, a directory) is refused.
//
// same_file(): whether two paths name one file (device and inode: through symlinks and hard
// links); false when either does not exist.
//
// Thread-safety: none needed (command-line tools; the umask is read by the constructor).
#pragma once

#include <sys/stat.h>

#include <stdexcept>
#include <string>

namespace twinlane::replay {

class OutputError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class OutputFile {
  public:
    // Creates the temporary file; throws OutputError naming `path` and the reason.
    explicit OutputFile(const std::string& path);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    const std::string& path() const { return path_; }
    // Where to write until commit().
    const std::string& temporary_path() const { return temporary_path_; }
    // Renames the temporary file over the destination; throws OutputError on failure.
    void commit();

  private:
    std::string path_;
    std::string destination_;  // path_ with a symlink resolved
    std::string temporary_path_;
    bool committed_ = false;
};

bool same_file(const std::string& a, const std::string& b);
// The same for a path and an open descriptor (stdin as `-i -`).
bool same_file(const std::string& path, int fd);

}  // namespace twinlane::replay
