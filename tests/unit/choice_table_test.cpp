// The mixed plan's compact choice table (src/schedule/choice_table.hpp) against the plain values
// it was given.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "choice_table.hpp"
#include "rewind/error.hpp"

namespace rwd::schedule::detail {
namespace {

// Rows that mostly step by a little and sometimes jump (past a byte) or hit the extremes.
std::vector<std::uint32_t> row_of(std::mt19937_64& rng, std::int64_t columns) {
  std::vector<std::uint32_t> v(static_cast<std::size_t>(columns));
  std::int64_t x = 1;
  for (auto& e : v) {
    const int kind = static_cast<int>(rng() % 100);
    if (kind < 3) {
      x = static_cast<std::int64_t>(rng() % 4'000'000'000ull);  // a jump
    } else if (kind < 4) {
      x = kind % 2 == 0 ? 0 : UINT32_MAX;
    } else {
      x += static_cast<std::int64_t>(rng() % 255) - 127;  // a step that fits
    }
    x = std::clamp<std::int64_t>(x, 0, UINT32_MAX);
    e = static_cast<std::uint32_t>(x);
  }
  return v;
}

TEST(ChoiceTable, ReadsBackEveryValueOfRowsSetInAnyOrderAndSetAgain) {
  std::mt19937_64 rng(20261126);
  for (const std::int64_t columns : {0, 1, 63, 64, 65, 200, 1000}) {
    const std::int64_t rows = 5;
    ChoiceTable table(rows, columns);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < columns; ++c) EXPECT_EQ(table.at(r, c), 1u);  // unset
    }
    std::vector<std::vector<std::uint32_t>> want(rows);
    for (const std::int64_t r : {3, 0, 4, 1, 3, 2, 0}) {  // out of order, rows 3 and 0 twice
      want[static_cast<std::size_t>(r)] = row_of(rng, columns);
      table.set_row(r, want[static_cast<std::size_t>(r)]);
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < columns; ++c) {
        ASSERT_EQ(table.at(r, c), want[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)])
            << "row " << r << " column " << c << " of " << columns;
      }
    }
  }
}

TEST(ChoiceTable, TakesAboutAByteACellWhenStepsAreSmall) {
  const std::int64_t rows = 21, columns = 100'001;
  ChoiceTable table(rows, columns);
  std::vector<std::uint32_t> v(columns);
  for (std::int64_t c = 0; c < columns; ++c)
    v[static_cast<std::size_t>(c)] = static_cast<std::uint32_t>(c / 3 + (c % 7));
  for (std::int64_t r = 0; r < rows; ++r) table.set_row(r, v);
  EXPECT_LT(table.bytes(), static_cast<std::size_t>(1.1 * rows * columns));
  EXPECT_EQ(table.at(20, 99'999), v[99'999]);
}

TEST(ChoiceTable, ARowSetAgainWithoutJumpsListsNothingAside) {
  ChoiceTable table(1, 200);
  std::vector<std::uint32_t> v(200, 5);
  v[100] = 1'000'000;  // a jump there and back: two values listed aside
  table.set_row(0, v);
  const std::size_t with_jumps = table.bytes();
  v[100] = 5;
  table.set_row(0, v);
  EXPECT_EQ(table.bytes(), 200 + 4 * sizeof(std::uint32_t));  // the cells and four anchors
  EXPECT_LT(table.bytes(), with_jumps);
  EXPECT_EQ(table.at(0, 100), 5u);
  EXPECT_EQ(table.at(0, 101), 5u);
}

TEST(ChoiceTable, RefusesARowThatDoesNotFit) {
  ChoiceTable table(2, 10);
  const std::vector<std::uint32_t> short_row(9, 1);
  EXPECT_THROW(table.set_row(0, short_row), Error);
  const std::vector<std::uint32_t> row(10, 1);
  EXPECT_THROW(table.set_row(2, row), Error);
}

}  // namespace
}  // namespace rwd::schedule::detail
