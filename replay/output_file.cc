#include "replay/output_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace twinlane::replay {

namespace {

std::string errno_text() {
    return std::strerror(errno);
}

bool same_inode(const struct stat& a, const struct stat& b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

OutputFile::OutputFile(const std::string& path) : path_(path), destination_(path) {
    struct stat link {};
    if (lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
        // Replace the link's target, not the link (a dangling link is replaced itself).
        char resolved[PATH_MAX];
        if (realpath(path.c_str(), resolved) != nullptr) destination_ = resolved;
    }
    const size_t slash = destination_.rfind('/');
    const std::string directory =
        slash == std::string::npos ? "" : destination_.substr(0, slash + 1);
    const std::string name =
        slash == std::string::npos ? destination_ : destination_.substr(slash + 1);
    if (name.empty()) throw OutputError("cannot write '" + path + "': not a file name");
    // A device, FIFO or socket is not replaced by a file (`-o /dev/null` as root would be).
    struct stat existing {};
    const bool exists = stat(destination_.c_str(), &existing) == 0;
    if (exists && !S_ISREG(existing.st_mode)) {
        throw OutputError("cannot write '" + path +
                          "': not a regular file (a device, FIFO, socket or directory)");
    }
    temporary_path_ = directory + "." + name + ".XXXXXX";
    const int fd = mkstemp(temporary_path_.data());
    if (fd < 0) {
        throw OutputError("cannot write '" + path + "': cannot create a file in " +
                          (directory.empty() ? std::string(".") : directory) + ": " + errno_text());
    }
    // mkstemp makes 0600; give what the file it replaces had, or what a new file would get.
    mode_t mode = 0;
    if (exists) {
        mode = existing.st_mode & 07777;
    } else {
        const mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    const bool mode_set = fchmod(fd, mode) == 0;
    const std::string reason = mode_set ? "" : errno_text();
    ::close(fd);
    if (!mode_set) {
        unlink(temporary_path_.c_str());
        throw OutputError("cannot write '" + path + "': chmod: " + reason);
    }
}

OutputFile::~OutputFile() {
    if (!committed_) unlink(temporary_path_.c_str());
}

void OutputFile::commit() {
    if (committed_) return;
    if (rename(temporary_path_.c_str(), destination_.c_str()) != 0) {
        throw OutputError("cannot write '" + path_ + "': rename from " + temporary_path_ + ": " +
                          errno_text());
    }
    committed_ = true;
}

bool same_file(const std::string& a, const std::string& b) {
    struct stat first {
    }, second{};
    return stat(a.c_str(), &first) == 0 && stat(b.c_str(), &second) == 0 &&
           same_inode(first, second);
}

bool same_file(const std::string& path, int fd) {
    struct stat first {
    }, second{};
    return stat(path.c_str(), &first) == 0 && fstat(fd, &second) == 0 && same_inode(first, second);
}

}  // namespace twinlane::replay
