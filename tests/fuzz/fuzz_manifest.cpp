// Fuzz target: the resume manifest reader (docs/resume.md). Any bytes must either be read as a
// manifest or refused with Error(Corrupt); never crash, hang, allocate without bound or trip a
// sanitizer. Each input is read twice: as it is (mostly refused by its checksum line) and
// resealed, its last line replaced by the right checksum of what comes before, so that the
// mutations reach every structural check. A manifest read must write back to text that reads
// back to the same text.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rewind/engine/manifest.hpp"
#include "rewind/error.hpp"

namespace {

void read(const std::string& text) {
  rwd::engine::Manifest m;
  try {
    m = rwd::engine::parse_manifest(text, "fuzz");
  } catch (const rwd::Error& e) {
    if (e.code() != rwd::ErrorCode::Corrupt) {
      std::fprintf(stderr, "manifest refused with a code other than Corrupt: %s\n", e.what());
      std::abort();
    }
    return;
  }
  const std::string again = rwd::engine::to_text(m);
  const rwd::engine::Manifest back = rwd::engine::parse_manifest(again, "fuzz (written back)");
  if (rwd::engine::to_text(back) != again || !rwd::engine::differences(m, back).empty()) {
    std::fprintf(stderr, "a manifest read and written back reads differently\n");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  read(text);
  const std::size_t end = text.rfind("\nend ");
  if (end != std::string::npos) {
    const std::string body = text.substr(0, end + 1);
    char line[32];
    std::snprintf(line, sizeof line, "end %016llx\n",
                  static_cast<unsigned long long>(XXH3_64bits(body.data(), body.size())));
    read(body + line);
  }
  return 0;
}
