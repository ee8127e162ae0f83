// The RAM store with a codec (StoreConfig::codec): lossless codecs give every bit back, awkward
// values, scalars and empty fields included; the stats count the stored blocks' bytes and what
// compression saved; zfp stays within its tolerance and uses the fields' grids; a bad codec is
// refused when the store is made (by the disk store too).
#include <cmath>
#include <vector>

#include "store_test_util.hpp"

namespace rwd::storage::test {
namespace {

Key restart(std::int64_t step) {
  return {step, Kind::Restart};
}

StoreConfig with_codec(const CodecSpec& codec) {
  StoreConfig c;
  c.comm = MPI_COMM_WORLD;
  c.capacity = 4;  // ignored with a codec: blocks are as large as they compress to
  c.slot_doubles = 1000;
  c.codec = codec;
  return c;
}

// A smooth field of n values on every rank: what compresses.
TestCheckpoint smooth_checkpoint(std::int64_t n, double phase) {
  TestCheckpoint c;
  TestCheckpoint::Field f{"u", {}, n * world_rank(), n * world_size()};
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i + n * world_rank()) / static_cast<double>(n);
    f.data.push_back(x < 0.5 ? 1.0 : std::sin(3 * x + phase) * std::exp(-x));  // half flat
  }
  c.fields.push_back(std::move(f));
  c.scalars.emplace_back("time", phase);
  return c;
}

TEST(RamStoreCodec, LosslessCodecsAreBitwiseAndCountWhatTheyStore) {
  for (const char* name : {"zstd", "blosc"}) {
    auto store = make_store("ram", with_codec({name}));
    TestCheckpoint awkward(11);
    store->put(restart(1), awkward.view());
    TestCheckpoint smooth = smooth_checkpoint(20000, 0.5);
    store->put(restart(2), smooth.view());
    expect_bitwise(*store, restart(2), smooth);
    expect_bitwise(*store, restart(1), awkward);
    const StoreStats s = store->stats();
    const std::int64_t raw = 8 * (20000 + static_cast<std::int64_t>(awkward.fields[0].data.size() +
                                                                    awkward.fields[1].data.size()));
    EXPECT_EQ(s.uncompressed_bytes_written, raw) << name;
    EXPECT_LT(s.live_bytes, raw * 3 / 4) << name << ": half-flat data below 1.33x";
    EXPECT_EQ(s.bytes_written, s.live_bytes) << name;
    EXPECT_GE(s.compress_seconds, 0.0);
    EXPECT_GT(s.decompress_seconds, 0.0) << name;
    store->erase(restart(2));
    store->erase(restart(1));
    EXPECT_EQ(store->stats().live_bytes, 0) << name;
    EXPECT_EQ(store->stats().live, 0) << name;
  }
}

// The largest difference between checkpoint `key` read back and `written`'s first field.
double largest_error(Store& store, const Key& key, const TestCheckpoint& written) {
  Readback back(written);
  auto span = back.span();
  store.get(key, span);
  double err = 0;
  for (std::size_t i = 0; i < written.fields[0].data.size(); ++i) {
    err = std::max(err, std::fabs(back.fields[0].data[i] - written.fields[0].data[i]));
  }
  return err;
}

TEST(RamStoreCodec, ZfpStaysWithinItsTolerance) {
  const double tol = 1e-7;
  auto store = make_store("ram", with_codec({"zfp", tol}));
  TestCheckpoint smooth = smooth_checkpoint(20000, 0.25);
  store->put(restart(0), smooth.view());
  const double err = largest_error(*store, restart(0), smooth);
  EXPECT_LE(err, tol);
  EXPECT_GT(err, 0.0);  // lossy indeed
  EXPECT_LT(store->stats().live_bytes, store->stats().uncompressed_bytes_written / 3);
}

// CheckpointView::exact under a lossy codec: that checkpoint keeps every bit (zstd), the others
// stay within the tolerance and take less room; under a lossless codec it changes nothing.
TEST(RamStoreCodec, AnExactCheckpointKeepsItsBitsUnderALossyCodec) {
  auto store = make_store("ram", with_codec({"zfp", 1e-6}));
  TestCheckpoint smooth = smooth_checkpoint(20000, 0.75);
  CheckpointView exact = smooth.view();
  exact.exact = true;
  store->put(restart(1), exact);
  const std::int64_t exact_bytes = store->stats().live_bytes;
  store->put(restart(2), smooth.view());
  const std::int64_t lossy_bytes = store->stats().live_bytes - exact_bytes;
  expect_bitwise(*store, restart(1), smooth);
  const double err = largest_error(*store, restart(2), smooth);
  EXPECT_GT(err, 0.0);  // the other one lost bits
  EXPECT_LE(err, 1e-6);
  EXPECT_LT(lossy_bytes, exact_bytes);
  auto zstd = make_store("ram", with_codec({"zstd"}));
  zstd->put(restart(1), exact);
  EXPECT_EQ(zstd->stats().live_bytes, exact_bytes);  // the exact one was zstd's block
}

// Fields with grids (FieldView::grid, as a DMDA's local block gives): zfp compresses each field
// in its dimensions, within its tolerance and in far fewer bytes than the same values without a
// grid; an exact checkpoint (zstd) keeps its bits; a field without a grid beside one with a
// grid round-trips too.
TEST(RamStoreCodec, ZfpCompressesFieldsOnTheirGrids) {
  const std::int64_t nx = 64, ny = 48, n = 2 * nx * ny, m = 100;
  const std::int64_t rank = world_rank(), size = world_size();
  std::vector<double> u, w;
  for (std::int64_t j = 0; j < ny; ++j) {
    for (std::int64_t i = 0; i < nx; ++i) {
      const double x = static_cast<double>(i) / nx, y = static_cast<double>(j + rank * ny) / ny;
      u.push_back(std::sin(3.0 * x) * std::cos(2.0 * y));
      u.push_back(0.5 + 0.25 * std::exp(-4.0 * (x * x + y * y)));
    }
  }
  for (std::int64_t i = 0; i < m; ++i) w.push_back(std::cos(0.05 * static_cast<double>(i)));
  const double tolerance = 1e-6;
  const auto round_trip = [&](bool grid, bool exact, double& err) {
    auto store = make_store("ram", with_codec({"zfp", tolerance}));
    const std::vector<FieldView> views = {
        {"u", u, rank * n, size * n, grid ? Grid{2, nx, ny, 1} : Grid{}},
        {"w", w, rank * m, size * m}};
    CheckpointView cv{views, {}};
    cv.exact = exact;
    store->put(restart(1), cv);
    std::vector<double> bu(u.size()), bw(w.size());
    const std::vector<FieldSpan> spans = {{"u", bu, rank * n, size * n},
                                          {"w", bw, rank * m, size * m}};
    store->get(restart(1), {spans, {}});
    err = 0.0;
    bool same = true;
    for (std::size_t i = 0; i < u.size(); ++i) {
      err = std::max(err, std::fabs(bu[i] - u[i]));
      same = same && bits(bu[i]) == bits(u[i]);
    }
    for (std::size_t i = 0; i < w.size(); ++i) {
      err = std::max(err, std::fabs(bw[i] - w[i]));
      same = same && bits(bw[i]) == bits(w[i]);
    }
    if (exact) {
      EXPECT_TRUE(same) << "an exact checkpoint keeps its bits";
    }
    return store->stats().bytes_written;
  };
  double err_grid = 0, err_flat = 0, err_exact = 0;
  const std::int64_t on_grid = round_trip(true, false, err_grid);
  const std::int64_t flat = round_trip(false, false, err_flat);
  round_trip(true, true, err_exact);
  EXPECT_LE(err_grid, tolerance);
  EXPECT_GT(err_grid, 0.0);
  EXPECT_LE(err_flat, tolerance);
  EXPECT_EQ(err_exact, 0.0);
  EXPECT_LT(2 * on_grid, flat) << "on the grid: " << on_grid << " bytes, without: " << flat;
}

TEST(RamStoreCodec, ABadCodecIsRefusedWhenTheStoreIsMade) {
  expect_error([] { make_store("ram", with_codec({"zfp"})); }, ErrorCode::InvalidArgument,
               {"ram store codec: zfp needs a tolerance > 0"});
  expect_error([] { make_store("ram", with_codec({"gzip"})); }, ErrorCode::InvalidArgument,
               {"ram store codec: unknown codec 'gzip'"});
  ScratchDir dir;
  StoreConfig c = with_codec({"zfp"});
  c.directory = dir.path();
  expect_error([&] { make_store("hdf5", c); }, ErrorCode::InvalidArgument,
               {"hdf5 store codec: zfp needs a tolerance > 0"});
}

}  // namespace
}  // namespace rwd::storage::test
