// Where a block goes in the HDF5 store's file: slabs, shapes, rows and byte offsets (see
// slab_table.hpp). No MPI and no HDF5.
#include "slab_table.hpp"

#include <algorithm>
#include <utility>

namespace rwd::storage::detail {

std::string names_of(const CheckpointView& checkpoint) {
  std::string out = std::to_string(checkpoint.fields.size()) + " fields\n";
  for (const auto& f : checkpoint.fields) {
    out += std::to_string(f.name.size()) + ':' + std::string(f.name) + ' ' +
           std::to_string(f.global_size) + '\n';
  }
  out += std::to_string(checkpoint.scalars.size()) + " scalars\n";
  for (const auto& scalar : checkpoint.scalars) {
    out += std::to_string(scalar.name.size()) + ':' + std::string(scalar.name) + '\n';
  }
  return out;
}

std::string tiling_problem(std::int64_t global_size, const std::vector<std::int64_t>& offsets,
                           const std::vector<std::int64_t>& counts) {
  struct Block {
    std::int64_t begin, end;
    std::size_t rank;
  };
  std::vector<Block> blocks;
  for (std::size_t r = 0; r < offsets.size(); ++r) {
    if (counts[r] > 0) blocks.push_back({offsets[r], offsets[r] + counts[r], r});
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const Block& a, const Block& b) { return a.begin < b.begin; });
  std::int64_t end = 0;
  std::string problem;
  for (std::size_t i = 0; i < blocks.size() && problem.empty(); ++i) {
    const Block& b = blocks[i];
    const std::string range = "rank " + std::to_string(b.rank) + "'s block [" +
                              std::to_string(b.begin) + ", " + std::to_string(b.end) + ")";
    if (b.begin < end)
      problem = range + " overlaps the block before it, which ends at " + std::to_string(end);
    if (b.begin > end)
      problem = "nothing covers [" + std::to_string(end) + ", " + std::to_string(b.begin) +
                ") before " + range;
    end = b.end;
  }
  if (problem.empty() && end != global_size) {
    problem = "the blocks end at " + std::to_string(end) + " but the global size is " +
              std::to_string(global_size);
  }
  return problem;
}

std::optional<std::size_t> SlabTable::last_for(const std::string& names) const {
  std::optional<std::size_t> last;
  for (std::size_t k = 0; k < slabs_.size(); ++k) {
    if (slabs_[k].names == names) last = k;
  }
  return last;
}

bool SlabTable::holds_blocks_of(std::size_t k, int rank, const CheckpointView& checkpoint) const {
  const Slab& slab = slabs_[k];
  const auto r = static_cast<std::size_t>(rank);
  for (std::size_t f = 0; f < checkpoint.fields.size(); ++f) {
    if (slab.offsets[f][r] != checkpoint.fields[f].offset ||
        slab.counts[f][r] != static_cast<std::int64_t>(checkpoint.fields[f].data.size())) {
      return false;
    }
  }
  return true;
}

std::size_t SlabTable::shape_of(const std::string& names, const Blocks& blocks) {
  // The names and every block; every rank builds the same text.
  std::string text = names;
  for (std::size_t f = 0; f < blocks.offsets.size(); ++f) {
    for (std::size_t r = 0; r < blocks.offsets[f].size(); ++r) {
      text +=
          ' ' + std::to_string(blocks.offsets[f][r]) + ':' + std::to_string(blocks.counts[f][r]);
    }
    text += '\n';
  }
  const auto shape =
      static_cast<std::size_t>(std::find(shapes_.begin(), shapes_.end(), text) - shapes_.begin());
  if (shape == shapes_.size()) shapes_.push_back(std::move(text));
  return shape;
}

SlabTable::Choice SlabTable::choose(std::size_t shape, std::int64_t global_bytes) const {
  Choice choice;
  std::int64_t alike = 0;  // rows of this shape already
  for (std::size_t k = 0; k < slabs_.size(); ++k) {
    if (slabs_[k].shape != shape) continue;
    alike += slabs_[k].rows;
    if (!choice.slab && slabs_[k].free > 0) choice.slab = k;
  }
  if (choice.slab) return choice;
  const std::int64_t by_bytes =
      std::max<std::int64_t>(1, kSlabBytes / std::max<std::int64_t>(1, global_bytes));
  choice.new_rows = std::clamp<std::int64_t>(alike, 1, std::min(kSlabRows, by_bytes));
  return choice;
}

Slab SlabTable::make_slab(std::size_t shape, const std::string& names, Blocks blocks,
                          const CheckpointView& checkpoint, std::int64_t rows) const {
  const auto n = static_cast<std::size_t>(rows);
  Slab slab;
  slab.name = "slab_" + std::to_string(slabs_.size());
  slab.shape = shape;
  slab.names = names;
  slab.offsets = std::move(blocks.offsets);
  slab.counts = std::move(blocks.counts);
  slab.rows = rows;
  slab.free = rows;
  slab.state.assign(n, RowState::Free);
  slab.step.assign(n, -1);
  slab.kind.assign(n, -1);
  slab.run.assign(n, -1);
  slab.complete.assign(n, 0);
  for (const auto& scalar : checkpoint.scalars) {
    slab.scalar_names.emplace_back(scalar.name);
    slab.scalars.emplace_back(n, 0.0);
  }
  for (const auto& f : checkpoint.fields) {
    slab.fields.emplace_back(f.name);
    slab.global.push_back(f.global_size);
    slab.checksums.emplace_back(n * static_cast<std::size_t>(ranks_), 0);
    slab.stored.emplace_back(n * static_cast<std::size_t>(ranks_), 0);
  }
  slab.base.assign(checkpoint.fields.size(), 0);
  return slab;
}

std::size_t SlabTable::add(Slab slab) {
  slabs_.push_back(std::move(slab));
  return slabs_.size() - 1;
}

SlabTable::Row SlabTable::take(std::size_t k, const Key& key, std::span<const Scalar> scalars) {
  Slab& slab = slabs_[k];
  std::int64_t index = 0;
  while (slab.state[static_cast<std::size_t>(index)] != RowState::Free) ++index;
  const auto j = static_cast<std::size_t>(index);
  slab.state[j] = RowState::Held;
  slab.free -= 1;
  slab.step[j] = key.step;
  slab.kind[j] = static_cast<std::int64_t>(key.kind);
  slab.run[j] = key.recording;
  slab.complete[j] = 0;
  for (std::size_t s = 0; s < scalars.size(); ++s) slab.scalars[s][j] = scalars[s].value;
  slab.dirty = true;
  return {k, index};
}

void SlabTable::release(Row row) {
  Slab& slab = slabs_[row.slab];
  const auto j = static_cast<std::size_t>(row.index);
  if (slab.complete[j] != 0) {  // the file says sealed: free once the next seal says erased
    slab.state[j] = RowState::Erased;
    slab.complete[j] = 0;
    slab.dirty = true;
  } else {
    slab.state[j] = RowState::Free;
    slab.free += 1;
  }
}

void SlabTable::set_checksum(Row row, std::size_t field, int rank, std::uint64_t value) {
  const std::size_t at = static_cast<std::size_t>(row.index) * static_cast<std::size_t>(ranks_) +
                         static_cast<std::size_t>(rank);
  slabs_[row.slab].checksums[field][at] = value;
}

void SlabTable::set_stored(Row row, std::size_t field, int rank, std::int64_t bytes) {
  const std::size_t at = static_cast<std::size_t>(row.index) * static_cast<std::size_t>(ranks_) +
                         static_cast<std::size_t>(rank);
  slabs_[row.slab].stored[field][at] = bytes;
}

void SlabTable::mark_complete(Row row) {
  Slab& slab = slabs_[row.slab];
  slab.complete[static_cast<std::size_t>(row.index)] = 1;
  slab.dirty = true;
}

std::int64_t SlabTable::dirty_slabs() const {
  std::int64_t n = 0;
  for (const Slab& slab : slabs_) n += slab.dirty ? 1 : 0;
  return n;
}

void SlabTable::sealed() {
  for (Slab& slab : slabs_) {
    slab.dirty = false;
    for (auto& s : slab.state) {
      if (s != RowState::Erased) continue;
      s = RowState::Free;
      slab.free += 1;
    }
  }
}

std::int64_t SlabTable::block_at(Row row, std::size_t field, int rank) const {
  const Slab& slab = slabs_[row.slab];
  return row_at(row, field) + 8 * slab.offsets[field][static_cast<std::size_t>(rank)];
}

std::int64_t SlabTable::row_at(Row row, std::size_t field) const {
  const Slab& slab = slabs_[row.slab];
  return slab.base[field] + 8 * row.index * slab.global[field];
}

}  // namespace rwd::storage::detail
