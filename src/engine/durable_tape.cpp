#include "durable_tape.hpp"

#include <cstdio>
#include <optional>
#include <sstream>

#include "rewind/engine/durable_files.hpp"
#include "rewind/error.hpp"

namespace rwd::engine::detail {

namespace {

// Version 2 gives each block its stored bytes (a compressed block's size, 0 for raw values);
// version 1, without them, is still read (every block raw).
constexpr std::string_view kMagic = "rewind tape 2";
constexpr std::string_view kMagicRaw = "rewind tape 1";

[[noreturn]] void damaged(const std::string& what) {
  throw Error(ErrorCode::Corrupt, "durable tape: " + what + " (the tape's file was damaged)");
}

std::string unhex(const std::string& hex) {
  std::optional<std::string> text = text_of_hex(hex);
  if (!text) damaged("a name that is not hex text");
  return *text;
}

}  // namespace

std::string to_text(const TapeData& t) {
  std::ostringstream os;
  os << kMagic << "\nsteps " << t.steps << "\nfile " << hex_text(t.file) << "\n";
  for (const TapeKey& k : t.keys) {
    os << "key " << k.step << " " << static_cast<int>(k.kind) << " " << static_cast<int>(k.level)
       << " " << k.variables.size();
    for (std::size_t v : k.variables) os << " " << v;
    os << " " << k.blocks.size();
    for (const storage::SealedBlock& b : k.blocks) {
      char sum[17];
      std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(b.checksum));
      os << " " << hex_text(b.field) << " " << b.at << " " << b.count << " " << sum << " "
         << b.stored;
    }
    os << "\n";
  }
  os << "check " << hex_text(t.check) << "\n";
  return os.str();
}

TapeData parse_tape(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  if (!std::getline(in, line) || (line != kMagic && line != kMagicRaw)) damaged("not a tape");
  const bool sized = line == kMagic;
  TapeData t;
  bool check = false;
  while (std::getline(in, line)) {
    std::istringstream w(line);
    std::string item;
    w >> item;
    if (item == "steps") {
      if (!(w >> t.steps) || t.steps < 1) damaged("a bad step count");
    } else if (item == "file") {
      std::string hex;
      w >> hex;
      t.file = unhex(hex);
    } else if (item == "key") {
      TapeKey k;
      int kind = -1, level = -1;
      std::size_t vars = 0, blocks = 0;
      if (!(w >> k.step >> kind >> level >> vars) || kind < 0 || kind > 2 || level < 1 ||
          level > 3 || vars > (1u << 16)) {
        damaged("a bad key");
      }
      k.kind = static_cast<storage::Kind>(kind);
      k.level = static_cast<schedule::Level>(level);
      k.variables.resize(vars);
      for (std::size_t& v : k.variables) {
        if (!(w >> v)) damaged("a bad key");
      }
      if (!(w >> blocks) || blocks > (1u << 16)) damaged("a bad key");
      k.blocks.resize(blocks);
      for (storage::SealedBlock& b : k.blocks) {
        std::string field, sum;
        if (!(w >> field >> b.at >> b.count >> sum) || sum.size() != 16) damaged("a bad block");
        if (sized && (!(w >> b.stored) || b.stored < 0)) damaged("a bad block");
        b.field = unhex(field);
        b.checksum = std::stoull(sum, nullptr, 16);
      }
      t.keys.push_back(std::move(k));
    } else if (item == "check") {
      std::string hex;
      w >> hex;
      t.check = unhex(hex);
      check = true;
    } else {
      damaged("an unknown line");
    }
  }
  if (!check || t.file.empty()) damaged("a tape cut short");
  return t;
}

}  // namespace rwd::engine::detail
