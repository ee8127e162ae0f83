// The HDF5 store's slab table on its own (src/storage/slab_table.hpp): no MPI, no HDF5, no file.
// How many rows a new slab gets, which row a checkpoint takes, when a freed row is taken again,
// and where a rank's block lies in the file.
#include "slab_table.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rwd::storage::detail {
namespace {

// One field `u` of `global` values, of which this rank holds `count` at `offset`; one scalar.
struct OneField {
  std::vector<double> data;
  std::vector<FieldView> fields;
  std::vector<Scalar> scalars;
  OneField(std::int64_t global, std::int64_t offset, std::int64_t count, const char* name = "u")
      : data(static_cast<std::size_t>(count), 1.0) {
    fields.push_back({name, data, offset, global});
    scalars.push_back({"time", 0.25});
  }
  CheckpointView view() const { return {fields, scalars}; }
};

// Blocks of one field: every rank's (offset, count).
Blocks blocks_of(std::vector<std::int64_t> offsets, std::vector<std::int64_t> counts) {
  return Blocks{{std::move(offsets)}, {std::move(counts)}};
}

// Puts checkpoints of one shape (one rank, `global` doubles) until `slabs` slabs exist, taking
// every row; returns each new slab's rows.
std::vector<std::int64_t> growth(std::int64_t global, int slabs) {
  SlabTable table(1);
  const OneField cp(global, 0, 0);  // no data: only the names and sizes count
  const std::string names = names_of(cp.view());
  const std::size_t shape = table.shape_of(names, blocks_of({0}, {global}));
  std::vector<std::int64_t> rows;
  for (std::int64_t step = 0; static_cast<int>(rows.size()) < slabs; ++step) {
    const SlabTable::Choice choice = table.choose(shape, 8 * global);
    std::size_t k = 0;
    if (choice.slab) {
      k = *choice.slab;
    } else {
      rows.push_back(choice.new_rows);
      k = table.add(
          table.make_slab(shape, names, blocks_of({0}, {global}), cp.view(), choice.new_rows));
    }
    table.take(k, Key{step, Kind::Restart}, cp.scalars);
  }
  return rows;
}

TEST(SlabTable, SlabsDoubleTheRowsOfTheirShapeUpToTheRowCap) {
  EXPECT_EQ(growth(10, 10), (std::vector<std::int64_t>{1, 1, 2, 4, 8, 16, 32, 64, 64, 64}));
}

TEST(SlabTable, SlabsStopGrowingAtTheByteCapButKeepOneRow) {
  // 16 MiB checkpoints: at most 4 rows of 64 MiB.
  EXPECT_EQ(growth(std::int64_t{2} << 20, 7), (std::vector<std::int64_t>{1, 1, 2, 4, 4, 4, 4}));
  // 3 MiB: 21 rows.
  EXPECT_EQ(growth(3 << 17, 8), (std::vector<std::int64_t>{1, 1, 2, 4, 8, 16, 21, 21}));
  // Larger than a slab's bytes: one row each.
  EXPECT_EQ(growth(std::int64_t{10} << 20, 4), (std::vector<std::int64_t>{1, 1, 1, 1}));
}

TEST(SlabTable, AFreedRowIsTakenAgainAndTheFirstFreeRowGoesFirst) {
  SlabTable table(1);
  const OneField cp(4, 0, 4);
  const std::string names = names_of(cp.view());
  const std::size_t shape = table.shape_of(names, blocks_of({0}, {4}));
  const std::size_t k = table.add(table.make_slab(shape, names, blocks_of({0}, {4}), cp.view(), 4));
  std::vector<SlabTable::Row> rows;
  for (std::int64_t i = 0; i < 4; ++i) {
    rows.push_back(table.take(k, Key{i, Kind::Restart}, cp.scalars));
    EXPECT_EQ(rows.back().index, i);
  }
  EXPECT_EQ(table.slab(k).free, 0);
  EXPECT_FALSE(table.choose(shape, 32).slab) << "a full slab offers no row";
  table.release(rows[2]);
  table.release(rows[1]);
  EXPECT_EQ(table.slab(k).free, 2);
  ASSERT_EQ(table.choose(shape, 32).slab, k);
  const SlabTable::Row again = table.take(k, Key{7, Kind::Pullback, 3}, cp.scalars);
  EXPECT_EQ(again.slab, k);
  EXPECT_EQ(again.index, 1);
  // What the seal will write for the row is the new checkpoint's.
  const Slab& slab = table.slab(k);
  EXPECT_EQ(slab.step[1], 7);
  EXPECT_EQ(slab.kind[1], 1);
  EXPECT_EQ(slab.run[1], 3);
  EXPECT_EQ(slab.complete[1], 0);
  EXPECT_EQ(slab.scalars[0][1], 0.25);
  EXPECT_TRUE(slab.dirty);
  EXPECT_EQ(table.slabs().size(), 1u) << "no slab is added while a row is free";
}

TEST(SlabTable, ARowTheFileCallsCompleteIsNotReusedUntilTheSeal) {
  SlabTable table(2);
  const OneField cp(6, 0, 3);
  const std::string names = names_of(cp.view());
  const Blocks blocks = blocks_of({0, 3}, {3, 3});
  const std::size_t shape = table.shape_of(names, blocks);
  const std::size_t k = table.add(table.make_slab(shape, names, blocks, cp.view(), 1));
  const SlabTable::Row row = table.take(k, Key{0, Kind::Restart}, cp.scalars);
  // The seal: each rank's checksum, then complete.
  table.set_checksum(row, 0, 0, 0xAAu);
  table.set_checksum(row, 0, 1, 0xBBu);
  table.mark_complete(row);
  EXPECT_EQ(table.dirty_slabs(), 1);
  table.sealed();
  EXPECT_EQ(table.dirty_slabs(), 0);
  EXPECT_EQ(table.slab(k).checksums[0], (std::vector<std::uint64_t>{0xAAu, 0xBBu}));
  EXPECT_EQ(table.slab(k).complete[0], 1);

  table.release(row);
  EXPECT_EQ(table.slab(k).state[0], RowState::Erased);
  EXPECT_EQ(table.slab(k).complete[0], 0) << "the next seal writes complete = 0";
  EXPECT_EQ(table.slab(k).free, 0);
  EXPECT_EQ(table.dirty_slabs(), 1);
  const SlabTable::Choice before = table.choose(shape, 48);
  EXPECT_FALSE(before.slab) << "the erased row must wait for the seal";
  EXPECT_EQ(before.new_rows, 1);

  table.sealed();
  EXPECT_EQ(table.slab(k).state[0], RowState::Free);
  EXPECT_EQ(table.slab(k).free, 1);
  EXPECT_EQ(table.choose(shape, 48).slab, k);
  EXPECT_EQ(table.take(k, Key{1, Kind::Restart}, cp.scalars).index, 0);

  // A row never sealed is free at once.
  const std::size_t k2 = table.add(table.make_slab(shape, names, blocks, cp.view(), 1));
  const SlabTable::Row unsealed = table.take(k2, Key{2, Kind::Restart}, cp.scalars);
  table.release(unsealed);
  EXPECT_EQ(table.slab(k2).state[0], RowState::Free);
  EXPECT_EQ(table.choose(shape, 48).slab, k2);
}

TEST(SlabTable, BlockOffsetsOfUnevenBlocks) {
  // Three ranks; u has 10 values (3, none, 7), v has 5 (2, 2, 1).
  SlabTable table(3);
  std::vector<double> u(7), v(1);
  const std::vector<FieldView> fields = {{"u", u, 3, 10}, {"v", v, 4, 5}};
  const CheckpointView cp{fields, {}};
  const Blocks blocks{{{0, 3, 3}, {0, 2, 4}}, {{3, 0, 7}, {2, 2, 1}}};
  const std::string names = names_of(cp);
  const std::size_t shape = table.shape_of(names, blocks);
  Slab slab = table.make_slab(shape, names, blocks, cp, 4);
  EXPECT_EQ(slab.name, "slab_0");
  EXPECT_EQ(slab.base, (std::vector<std::int64_t>{0, 0}))
      << "filled in once HDF5 made the datasets";
  EXPECT_EQ(slab.checksums[1].size(), 12u) << "rows x ranks";
  slab.base = {4096, 65536};
  const std::size_t k = table.add(std::move(slab));
  table.take(k, Key{0, Kind::Restart}, {});
  table.take(k, Key{1, Kind::Restart}, {});
  const SlabTable::Row row = table.take(k, Key{2, Kind::Restart}, {});
  ASSERT_EQ(row.index, 2);
  EXPECT_EQ(table.row_at(row, 0), 4096 + 8 * 2 * 10);
  EXPECT_EQ(table.block_at(row, 0, 0), 4096 + 8 * (2 * 10 + 0));
  EXPECT_EQ(table.block_at(row, 0, 1), 4096 + 8 * (2 * 10 + 3)) << "an empty block";
  EXPECT_EQ(table.block_at(row, 0, 2), 4096 + 8 * (2 * 10 + 3));
  EXPECT_EQ(table.row_at(row, 1), 65536 + 8 * 2 * 5);
  EXPECT_EQ(table.block_at(row, 1, 2), 65536 + 8 * (2 * 5 + 4));
  EXPECT_TRUE(table.holds_blocks_of(k, 2, cp));
  EXPECT_FALSE(table.holds_blocks_of(k, 1, cp)) << "rank 1 holds nothing of u";
}

TEST(SlabTable, ShapesKeepTheirOwnSlabsAndGrowth) {
  SlabTable table(2);
  const OneField a(8, 0, 4, "u");
  const OneField b(8, 0, 4, "w");  // other names
  const Blocks even = blocks_of({0, 4}, {4, 4});
  const Blocks uneven = blocks_of({0, 6}, {6, 2});  // same names, other blocks
  const std::string names_a = names_of(a.view());
  const std::string names_b = names_of(b.view());
  EXPECT_NE(names_a, names_b);
  const std::size_t sa = table.shape_of(names_a, even);
  const std::size_t sb = table.shape_of(names_b, even);
  const std::size_t sc = table.shape_of(names_a, uneven);
  EXPECT_EQ(sa, 0u);
  EXPECT_EQ(sb, 1u);
  EXPECT_EQ(sc, 2u);
  EXPECT_EQ(table.shape_of(names_a, even), sa) << "a known shape is found, not added";
  EXPECT_EQ(table.shapes().size(), 3u);

  EXPECT_FALSE(table.last_for(names_a));
  const std::size_t a0 = table.add(table.make_slab(sa, names_a, even, a.view(), 1));
  const std::size_t b0 = table.add(table.make_slab(sb, names_b, even, b.view(), 1));
  table.take(a0, Key{0, Kind::Restart}, a.scalars);
  table.take(b0, Key{0, Kind::Pullback}, b.scalars);
  // Shape a's second slab has one row (a's rows so far), whatever b holds.
  const SlabTable::Choice next_a = table.choose(sa, 64);
  EXPECT_FALSE(next_a.slab);
  EXPECT_EQ(next_a.new_rows, 1);
  const std::size_t a1 = table.add(table.make_slab(sa, names_a, even, a.view(), 1));
  table.take(a1, Key{1, Kind::Restart}, a.scalars);
  EXPECT_EQ(table.choose(sa, 64).new_rows, 2);
  EXPECT_EQ(table.choose(sb, 64).new_rows, 1);
  EXPECT_EQ(table.choose(sc, 64).new_rows, 1) << "a shape with no slab starts at one row";
  EXPECT_EQ(table.slab(a1).name, "slab_2");
  EXPECT_EQ(table.last_for(names_a), a1);
  EXPECT_EQ(table.last_for(names_b), b0);
  // A freed row of b is no room for a.
  table.release({b0, 0});
  EXPECT_FALSE(table.choose(sa, 64).slab);
  EXPECT_EQ(table.choose(sb, 64).slab, b0);
}

TEST(SlabTable, NamesTextTellsListsApart) {
  std::vector<double> d(2);
  const std::vector<FieldView> ab = {{"a b", d, 0, 2}};
  const std::vector<FieldView> a_b = {{"a", d, 0, 2}, {"b", d, 0, 2}};
  const std::vector<Scalar> t = {{"t", 0.0}};
  EXPECT_NE(names_of({ab, {}}), names_of({a_b, {}}));
  EXPECT_NE(names_of({ab, {}}), names_of({ab, t}));
  EXPECT_EQ(names_of({ab, t}), "1 fields\n3:a b 2\n1 scalars\n1:t\n");
}

TEST(SlabTable, TilingProblems) {
  EXPECT_EQ(tiling_problem(10, {0, 4}, {4, 6}), "");
  EXPECT_EQ(tiling_problem(10, {4, 0, 99}, {6, 4, 0}), "") << "empty blocks are ignored";
  EXPECT_EQ(tiling_problem(10, {0, 6}, {4, 4}),
            "nothing covers [4, 6) before rank 1's block [6, 10)");
  EXPECT_EQ(tiling_problem(10, {0, 3}, {4, 7}),
            "rank 1's block [3, 10) overlaps the block before it, which ends at 4");
  EXPECT_EQ(tiling_problem(10, {0, 4}, {4, 4}), "the blocks end at 8 but the global size is 10");
}

}  // namespace
}  // namespace rwd::storage::detail
