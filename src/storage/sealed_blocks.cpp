#include "rewind/storage/sealed_blocks.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "checksum.hpp"
#include "rewind/error.hpp"
#include "rewind/storage/codec.hpp"

namespace rwd::storage {

namespace {

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string os_reason(const std::string& what, const std::string& path, int error) {
  return what + " '" + path + "': " + std::strerror(error);
}

}  // namespace

std::uint64_t block_checksum(std::span<const double> values) noexcept {
  return detail::checksum(values);
}

void read_sealed_blocks(const std::string& path, std::span<const SealedBlock> blocks,
                        std::span<const FieldSpan> out) {
  if (blocks.size() != out.size()) {
    throw Error(ErrorCode::InvalidArgument, "read_sealed_blocks: " + std::to_string(blocks.size()) +
                                                " blocks for " + std::to_string(out.size()) +
                                                " fields");
  }
  for (std::size_t f = 0; f < blocks.size(); ++f) {
    if (blocks[f].field != out[f].name ||
        blocks[f].count != static_cast<std::int64_t>(out[f].data.size()) || blocks[f].at < 0) {
      throw Error(ErrorCode::InvalidArgument,
                  "read_sealed_blocks: block " + std::to_string(f) + " is field '" +
                      blocks[f].field + "' of " + std::to_string(blocks[f].count) +
                      " values, the buffer is '" + std::string(out[f].name) + "' of " +
                      std::to_string(out[f].data.size()));
    }
  }
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) throw Error(ErrorCode::Io, os_reason("cannot open", path, errno));
  std::vector<std::byte> block;
  for (std::size_t f = 0; f < blocks.size(); ++f) {
    const bool compressed = blocks[f].stored > 0;
    std::span<std::byte> to = std::as_writable_bytes(out[f].data);
    if (compressed) {
      block.resize(static_cast<std::size_t>(blocks[f].stored));
      to = block;
    }
    std::size_t done = 0;
    while (done < to.size()) {
      const ssize_t got =
          ::pread(file.fd, to.data() + done, to.size() - done,
                  static_cast<off_t>(blocks[f].at + static_cast<std::int64_t>(done)));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw Error(ErrorCode::Io, os_reason("cannot read", path, errno));
      if (got == 0) {
        throw Error(ErrorCode::Corrupt,
                    "'" + path + "' ends inside field '" + blocks[f].field + "' (byte " +
                        std::to_string(blocks[f].at) + " + " + std::to_string(done) + " of " +
                        std::to_string(to.size()) + "): the file was cut short");
      }
      done += static_cast<std::size_t>(got);
    }
    if (compressed) {
      try {
        decode_block(block, out[f].data);  // checks the block's own checksum first
      } catch (const Error& e) {
        throw Error(ErrorCode::Corrupt, "field '" + blocks[f].field + "' in '" + path +
                                            "': its compressed block is damaged: " + e.what());
      }
    }
    const std::uint64_t sum = block_checksum(out[f].data);
    if (sum != blocks[f].checksum) {
      char hex[80];
      std::snprintf(hex, sizeof hex, "%016llx, expected %016llx",
                    static_cast<unsigned long long>(sum),
                    static_cast<unsigned long long>(blocks[f].checksum));
      throw Error(ErrorCode::Corrupt, "field '" + blocks[f].field + "' in '" + path +
                                          "' fails its checksum (read " + hex + ")");
    }
  }
}

}  // namespace rwd::storage
