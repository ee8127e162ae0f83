#include "choice_table.hpp"

#include <algorithm>
#include <string>

#include "rewind/error.hpp"

namespace rwd::schedule::detail {

ChoiceTable::ChoiceTable(std::int64_t rows, std::int64_t columns)
    : rows_(rows), columns_(columns), blocks_((columns + kBlock - 1) / kBlock) {
  require(rows >= 0 && columns >= 0, "choice table: negative size");
  steps_.assign(static_cast<std::size_t>(rows * columns), 0);
  anchors_.assign(static_cast<std::size_t>(rows * blocks_), 1);
}

void ChoiceTable::set_row(std::int64_t row, std::span<const std::uint32_t> values) {
  require(row >= 0 && row < rows_ && static_cast<std::int64_t>(values.size()) == columns_,
          "choice table: row " + std::to_string(row) + " of " + std::to_string(values.size()) +
              " values does not fit a table of " + std::to_string(rows_) + " rows of " +
              std::to_string(columns_));
  std::vector<std::pair<std::size_t, std::uint32_t>> listed;
  for (std::int64_t c = 0; c < columns_; ++c) {
    const std::uint32_t v = values[static_cast<std::size_t>(c)];
    if (c % kBlock == 0) {
      anchors_[static_cast<std::size_t>(row * blocks_ + c / kBlock)] = v;
      steps_[cell(row, c)] = 0;
      continue;
    }
    const std::int64_t step = static_cast<std::int64_t>(v) -
                              static_cast<std::int64_t>(values[static_cast<std::size_t>(c - 1)]);
    if (step > INT8_MIN && step <= INT8_MAX) {
      steps_[cell(row, c)] = static_cast<std::int8_t>(step);
    } else {
      steps_[cell(row, c)] = kAside;
      listed.emplace_back(cell(row, c), v);
    }
  }
  const auto in_row = [&](const auto& e) {  // the row's earlier values, if it is set again
    return e.first >= cell(row, 0) && e.first < cell(row, 0) + static_cast<std::size_t>(columns_);
  };
  std::erase_if(aside_, in_row);
  if (listed.empty()) return;
  aside_.insert(aside_.end(), listed.begin(), listed.end());
  std::sort(aside_.begin(), aside_.end());
}

std::uint32_t ChoiceTable::at(std::int64_t row, std::int64_t column) const {
  const std::int64_t first = column - column % kBlock;
  std::uint32_t v = anchors_[static_cast<std::size_t>(row * blocks_ + column / kBlock)];
  const std::int8_t* step = steps_.data() + cell(row, first);
  for (std::int64_t c = first + 1; c <= column; ++c) {
    const std::int8_t s = step[c - first];
    if (s != kAside) {
      v = static_cast<std::uint32_t>(static_cast<std::int64_t>(v) + s);
      continue;
    }
    const auto it = std::lower_bound(aside_.begin(), aside_.end(),
                                     std::pair<std::size_t, std::uint32_t>{cell(row, c), 0});
    v = it->second;
  }
  return v;
}

std::size_t ChoiceTable::bytes() const {
  return steps_.size() + anchors_.size() * sizeof(std::uint32_t) +
         aside_.size() * sizeof(aside_[0]);
}

}  // namespace rwd::schedule::detail
