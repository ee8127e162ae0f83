#pragma once
// A parked recording's tape as this rank's part of it is written down (Recording::make_durable)
// and read back (Recording::from_durable): the checkpoints it holds (key, level, restart
// variables) with this rank's sealed blocks of each in the store's file, the step count, and the
// replay check's prints. Text, one item a line; rank-local, no MPI.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rewind/schedule/action.hpp"
#include "rewind/storage/key.hpp"
#include "rewind/storage/sealed_blocks.hpp"

namespace rwd::engine::detail {

struct TapeKey {
  schedule::Step step = 0;
  storage::Kind kind = storage::Kind::Restart;
  schedule::Level level = schedule::Level::None;
  std::vector<std::size_t> variables;
  std::vector<storage::SealedBlock> blocks;  // this rank's, one a field
};

struct TapeData {
  schedule::Step steps = 0;
  std::string file;  // where the blocks are (a link that outlives the store)
  std::vector<TapeKey> keys;
  std::string check;  // ReplayCheck::save()
};

std::string to_text(const TapeData& tape);
/// Throws Error(Corrupt) for text to_text() did not write.
TapeData parse_tape(std::string_view text);

}  // namespace rwd::engine::detail
