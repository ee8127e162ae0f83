#pragma once
// Private: a table of whole numbers in rows that change little from one column to the next (the
// mixed plan's choices: the split point of a segment of each length, per slot count), kept in
// about one byte a cell: each cell holds the step from its left neighbour, each row an absolute
// value every 64 columns, and the rare step that does not fit in a byte is listed aside.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace rwd::schedule::detail {

class ChoiceTable {
 public:
  /// `rows` rows of `columns` cells, every cell 1 until its row is set.
  ChoiceTable(std::int64_t rows, std::int64_t columns);

  /// Sets row `row` to `values` (`columns` of them, each < 2^32). Rows may be set in any order,
  /// and set again.
  void set_row(std::int64_t row, std::span<const std::uint32_t> values);
  std::uint32_t at(std::int64_t row, std::int64_t column) const;
  /// Bytes held (the cells, the row anchors and the values listed aside).
  std::size_t bytes() const;

 private:
  static constexpr std::int64_t kBlock = 64;       // columns per anchor
  static constexpr std::int8_t kAside = INT8_MIN;  // the cell's value is listed aside
  std::size_t cell(std::int64_t row, std::int64_t column) const {
    return static_cast<std::size_t>(row * columns_ + column);
  }
  std::int64_t rows_, columns_, blocks_;
  std::vector<std::int8_t> steps_;      // value - left neighbour's, or kAside
  std::vector<std::uint32_t> anchors_;  // the value of column b * kBlock, per row and block
  std::vector<std::pair<std::size_t, std::uint32_t>> aside_;  // (cell, value), sorted by cell
};

}  // namespace rwd::schedule::detail
