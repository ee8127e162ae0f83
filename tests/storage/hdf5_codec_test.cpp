// Compressed disk checkpoints (StoreConfig::codec on the HDF5 store): each rank's block of each
// field is compressed on the thread that moves it and written at its place in the file, or
// written as it is when it does not get smaller. Bitwise round trips (write-behind and prefetch,
// and synchronous), fewer bytes moved, the seal's rank_stored_bytes, blocks read back without
// HDF5 (a resumed run), a damaged compressed block on one rank, and settings that differ.
#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "hdf5_store.hpp"
#include "rewind/storage/sealed_blocks.hpp"
#include "store_test_util.hpp"

namespace rwd::storage::test {
namespace {

constexpr std::int64_t kValues = 4000;  // per rank and field

Key restart(std::int64_t step) {
  return {step, Kind::Restart};
}

StoreConfig config(const ScratchDir& dir, bool async, CodecSpec codec = {"zstd", 0.0, 0}) {
  StoreConfig c;
  c.comm = MPI_COMM_WORLD;
  c.directory = dir.path();
  c.label = "codec";
  c.async_io = async;
  c.inline_io_bytes = 0;  // every checkpoint through the I/O thread when async
  c.codec = std::move(codec);
  return c;
}

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Field "smooth" compresses (runs of 64 equal values, or a slow sine), "noise" does not (random
// bits, NaNs included): one is stored compressed, the other as it is.
TestCheckpoint mixed(std::uint64_t seed, bool sine = false) {
  const int rank = world_rank();
  const std::int64_t offset = rank * kValues, global = kValues * world_size();
  TestCheckpoint c;
  TestCheckpoint::Field smooth{"smooth", {}, offset, global};
  TestCheckpoint::Field noise{"noise", {}, offset, global};
  for (std::int64_t i = 0; i < kValues; ++i) {
    const auto g = static_cast<std::uint64_t>(offset + i);
    smooth.data.push_back(sine ? std::sin(1e-3 * static_cast<double>(g + seed))
                               : 0.25 * static_cast<double>((g + seed) / 64));
    noise.data.push_back(std::bit_cast<double>(splitmix(g * 977 + seed)));
  }
  c.fields = {smooth, noise};
  c.scalars.emplace_back("time", 0.5 * static_cast<double>(seed));
  return c;
}

std::string read_at(const std::string& path, std::int64_t at, std::size_t n) {
  std::string out(n, '\0');
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return {};
  const bool got = ::pread(fd, out.data(), n, at) == static_cast<ssize_t>(n);
  ::close(fd);
  return got ? out : std::string();
}

TEST(Hdf5Codec, CompressedBlocksReadBackBitwiseAndMoveFewerBytes) {
  for (const bool async : {true, false}) {
    SCOPED_TRACE(async ? "write-behind and prefetch" : "synchronous");
    ScratchDir dir;
    Hdf5Store store(config(dir, async));
    std::vector<TestCheckpoint> cps;
    for (std::uint64_t k = 0; k < 4; ++k) cps.push_back(mixed(k));
    for (std::uint64_t k = 0; k < 4; ++k) store.put(restart(k), cps[k].view());
    store.flush();
    const std::int64_t raw = 2 * 8 * kValues;
    // The smooth field is a compressed block, the noise its values: sealed_blocks() says so.
    const std::vector<SealedBlock> blocks = store.sealed_blocks(restart(2));
    ASSERT_EQ(blocks.size(), 2u);
    EXPECT_GT(blocks[0].stored, 0);
    EXPECT_LT(blocks[0].stored, 8 * kValues / 10) << "runs of 64 equal values compress > 10x";
    EXPECT_EQ(blocks[1].stored, 0) << "random mantissas are stored as they are";
    EXPECT_EQ(blocks[0].checksum, block_checksum(cps[2].fields[0].data)) << "of the values";
    // In the file: a codec block where the smooth field's block starts, the noise's values.
    const std::int64_t mine = 8 * world_rank() * kValues;
    EXPECT_EQ(read_at(store.path(), store.field_file_offset(restart(2), "smooth") + mine, 4),
              "RWCB");
    const std::string word =
        read_at(store.path(), store.field_file_offset(restart(2), "noise") + mine, 8);
    ASSERT_EQ(word.size(), 8u);
    EXPECT_EQ(std::memcmp(word.data(), cps[2].fields[1].data.data(), 8), 0);
    // Read back without HDF5, as a resumed run does.
    Readback back(cps[2]);
    read_sealed_blocks(store.path(), blocks, back.span().fields);
    for (std::size_t f = 0; f < 2; ++f) {
      for (std::size_t i = 0; i < back.fields[f].data.size(); ++i) {
        ASSERT_EQ(bits(back.fields[f].data[i]), bits(cps[2].fields[f].data[i]));
      }
    }
    for (std::uint64_t k = 0; k < 4; ++k) {
      if (k % 2 == 0) store.prefetch(restart(k));  // read ahead: decompressed on the I/O thread
      expect_bitwise(store, restart(k), cps[k]);
    }
    const StoreStats s = store.stats();
    EXPECT_EQ(s.uncompressed_bytes_written, 4 * raw);
    EXPECT_LT(s.bytes_written, 4 * (8 * kValues + 8 * kValues / 10));
    EXPECT_GT(s.bytes_written, 4 * 8 * kValues) << "the noise is written as it is";
    EXPECT_EQ(s.bytes_read, s.bytes_written) << "each checkpoint read once, as stored";
    EXPECT_EQ(s.live_bytes, 4 * raw) << "the file keeps room for the values";
    EXPECT_GT(s.compress_seconds, 0.0);
    EXPECT_GT(s.decompress_seconds, 0.0);
    if (async) {
      EXPECT_GT(s.codec_io_thread_seconds, 0.0);
      EXPECT_LE(s.codec_io_thread_seconds, s.compress_seconds + s.decompress_seconds + 1e-12);
    } else {
      EXPECT_EQ(s.codec_io_thread_seconds, 0.0) << "no I/O thread";
    }
    store.close();
  }
}

TEST(Hdf5Codec, ADamagedCompressedBlockIsCorruptOnEveryRankAndNeverDecoded) {
  ScratchDir dir;
  auto c = config(dir, true);
  c.keep_files = true;
  Hdf5Store store(c);
  const TestCheckpoint a = mixed(1), b = mixed(2);
  store.put(restart(1), TestCheckpoint(a).view());
  store.put(restart(2), TestCheckpoint(b).view());
  store.flush();
  const int target = world_size() - 1;
  const std::vector<SealedBlock> blocks = store.sealed_blocks(restart(1));
  const std::int64_t at = store.field_file_offset(restart(1), "smooth") + 8 * target * kValues;
  if (world_rank() == target) {
    ASSERT_GT(blocks[0].stored, 60);
    const int fd = ::open(store.path().c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    unsigned char byte = 0;
    ASSERT_EQ(::pread(fd, &byte, 1, at + 56), 1);  // inside the payload, past the header
    byte ^= 0x04;
    ASSERT_EQ(::pwrite(fd, &byte, 1, at + 56), 1);
    ::close(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Readback back(a);
  auto span = back.span();
  expect_error([&] { store.get(restart(1), span); }, ErrorCode::Corrupt,
               {"restart 1", "field 'smooth'", "rank " + std::to_string(target), "compressed block",
                "does not decompress"});
  if (world_rank() == target) {
    expect_error([&] { read_sealed_blocks(store.path(), blocks, back.span().fields); },
                 ErrorCode::Corrupt, {"field 'smooth'", "compressed block is damaged"});
  }
  expect_bitwise(store, restart(2), b);  // the store carries on
}

TEST(Hdf5Codec, CodecSettingsThatDifferBetweenRanksAreRefusedByName) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  ScratchDir dir;
  const bool last = world_rank() == world_size() - 1;
  for (const auto& [mine, theirs] :
       {std::pair<CodecSpec, CodecSpec>{{"zstd", 0.0, 0}, {"none", 0.0, 0}},
        {{"zfp", 1e-6, 0}, {"zfp", 1e-7, 0}}}) {
    expect_error([&] { Hdf5Store store(config(dir, true, last ? mine : theirs)); },
                 ErrorCode::InvalidArgument, {"StoreConfig::codec", "different settings"});
  }
  expect_error(
      [&] {
        Hdf5Store store(config(dir, true, {"lz77", 0.0, 0}));
      },
      ErrorCode::InvalidArgument, {"hdf5 store codec", "lz77", "zstd"});
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "a refused store leaves no file";
}

TEST(Hdf5Codec, ALossyCodecKeepsExactCheckpointsBitwise) {
  ScratchDir dir;
  const double tolerance = 1e-6;
  Hdf5Store store(config(dir, true, {"zfp", tolerance, 0}));
  TestCheckpoint lossy = mixed(3, true), exact = mixed(4, true);
  store.put(restart(3), lossy.view());
  CheckpointView view = exact.view();
  view.exact = true;
  store.put(restart(4), view);
  expect_bitwise(store, restart(4), exact);
  Readback back(lossy);
  auto span = back.span();
  store.get(restart(3), span);
  double largest = 0.0;
  for (std::size_t f = 0; f < 2; ++f) {
    for (std::size_t i = 0; i < back.fields[f].data.size(); ++i) {
      largest = std::max(largest, std::abs(back.fields[f].data[i] - lossy.fields[f].data[i]));
    }
  }
  EXPECT_LE(largest, tolerance);
  EXPECT_LT(store.stats().bytes_written, store.stats().uncompressed_bytes_written);
}

TEST(Hdf5Codec, AKeptFileSaysHowItsBlocksAreStored) {
  ScratchDir dir;
  auto c = config(dir, false);
  c.keep_files = true;
  std::string path;
  {
    Hdf5Store store(c);
    TestCheckpoint a = mixed(5);
    store.put(restart(5), a.view());
    store.close();
    path = store.path();
  }
  if (world_rank() != 0) return;
  const auto [status, out] = h5dump_attributes(path);
  if (status != 0 && out.find("not found") != std::string::npos) GTEST_SKIP() << "no h5dump";
  for (const char* part : {"ATTRIBUTE \"codec\"", "\"zstd\"", "ATTRIBUTE \"rank_stored_bytes\"",
                           "Compressed blocks", "rank_stored_bytes says"}) {
    EXPECT_NE(out.find(part), std::string::npos) << "h5dump lacks " << part << ":\n" << out;
  }
}

}  // namespace
}  // namespace rwd::storage::test
