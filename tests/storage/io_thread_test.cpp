// The I/O thread and its jobs on their own: bytes and checksums, errors with the OS's reason,
// SIGXFSZ turned into EFBIG, FIFO order, cancel, one thread shared and stopped when unused.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "checksum.hpp"
#include "io_thread.hpp"
#include "layout.hpp"

namespace rwd::storage::detail {
namespace {

using namespace std::chrono_literals;

// XXH3-64 (seed 0) of the doubles 0, 1, ..., 9 (80 bytes: XXH3's short-input code), and of the
// 100 000 doubles 0, 0.5, 1, ... (800 000 bytes: its vectorised long-input code, whichever of
// AVX-512, AVX2 and SSE2 the dispatch picks), as xxHash 0.8's scalar XXH3_64bits_withSeed gives
// them. A file written on one machine must verify on another.
constexpr std::uint64_t kKnownChecksum = 0x8e156293febcfd3aull;
constexpr std::uint64_t kKnownLongChecksum = 0x343bd74ee89b5455ull;

// A temporary file, opened read-write, removed at the end.
class TempFile {
 public:
  TempFile() {
    std::string pattern = (std::filesystem::temp_directory_path() / "rewind-io-XXXXXX").string();
    fd_ = ::mkstemp(pattern.data());
    path_ = pattern;
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

std::vector<double> values(std::size_t n, double seed) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = seed + static_cast<double>(i) / 3.0;
  return v;
}

Segment segment(std::int64_t at, std::vector<double>& v) {
  return {at, reinterpret_cast<std::byte*>(v.data()), v.size() * sizeof(double)};
}

TEST(IoJob, WritesAndReadsBackWithTheChecksumOfEachSegment) {
  TempFile file;
  ASSERT_GE(file.fd(), 0);
  // Larger than one checksum chunk (2 MiB), and one that is not a multiple of 32 bytes.
  std::vector<double> a = values(300001, 1.0), b = values(13, 2.0);
  const std::int64_t after = static_cast<std::int64_t>(a.size() * 8) + 64;
  IoJob write{
      IoJob::Kind::Write, file.fd(), {segment(0, a), segment(after, b)}, nullptr, {}, nullptr};
  const JobResult w = run_job(write);
  ASSERT_EQ(w.error, 0) << w.failed_call;
  ASSERT_EQ(w.checksums.size(), 2u);
  EXPECT_EQ(w.checksums[0], checksum(std::span<const double>(a)));
  EXPECT_EQ(w.checksums[1], checksum(std::span<const double>(b)));
  EXPECT_GE(w.finished, w.started);

  std::vector<double> a2(a.size()), b2(b.size());
  IoJob read{IoJob::Kind::Read, file.fd(), {segment(0, a2), segment(after, b2)},
             nullptr,           {},        nullptr};
  const JobResult r = run_job(read);
  ASSERT_EQ(r.error, 0);
  EXPECT_EQ(r.checksums, w.checksums);
  EXPECT_EQ(std::memcmp(a.data(), a2.data(), a.size() * 8), 0);
  EXPECT_EQ(std::memcmp(b.data(), b2.data(), b.size() * 8), 0);

  EXPECT_EQ(run_job({IoJob::Kind::Sync, file.fd(), {}, nullptr, {}, nullptr}).error, 0);
}

TEST(IoJob, FailuresCarryTheCallTheSegmentAndErrno) {
  TempFile file;
  std::vector<double> a = values(10, 1.0), b = values(10, 2.0);
  const int ro = ::open(file.path().c_str(), O_RDONLY);
  ASSERT_GE(ro, 0);
  const JobResult w = run_job({IoJob::Kind::Write, ro, {segment(0, a)}, nullptr, {}, nullptr});
  EXPECT_EQ(w.error, EBADF);
  EXPECT_EQ(w.failed_call, "pwrite");
  ::close(ro);
  // A read past the end of the file finds the block missing.
  ASSERT_EQ(run_job({IoJob::Kind::Write, file.fd(), {segment(0, a)}, nullptr, {}, nullptr}).error,
            0);
  const JobResult r = run_job(
      {IoJob::Kind::Read, file.fd(), {segment(0, a), segment(4096, b)}, nullptr, {}, nullptr});
  EXPECT_EQ(r.error, EIO);
  EXPECT_EQ(r.failed_call, "pread");
  EXPECT_EQ(r.failed_segment, 1u);
}

TEST(IoJob, AWriteBeyondTheFileSizeLimitIsEfbigNotASignal) {
  TempFile file;
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_DFL);  // would kill the process
  struct rlimit limit = old;
  limit.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
  std::vector<double> a = values(2000, 1.0);  // 16000 bytes
  const JobResult w =
      run_job({IoJob::Kind::Write, file.fd(), {segment(0, a)}, nullptr, {}, nullptr});
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(w.error, EFBIG) << std::strerror(w.error);
  EXPECT_STREQ(std::strerror(w.error), "File too large");
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGXFSZ)) << "a SIGXFSZ was left pending";
}

TEST(IoThread, RunsJobsInOrderAndCancelDropsTheQueuedOnes) {
  TempFile file;
  auto io = IoThread::acquire();
  EXPECT_EQ(IoThread::running(), 1);
  EXPECT_NE(io->id(), std::this_thread::get_id());
  std::vector<double> first = values(100, 1.0), second = values(100, 2.0), back(100);
  IoThread::set_paused(true);
  const int owner = 0, other = 0;
  auto t1 = io->submit({IoJob::Kind::Write, file.fd(), {segment(0, first)}, nullptr, {}, nullptr},
                       &owner);
  auto t2 = io->submit({IoJob::Kind::Write, file.fd(), {segment(0, second)}, nullptr, {}, nullptr},
                       &owner);
  auto t3 =
      io->submit({IoJob::Kind::Read, file.fd(), {segment(0, back)}, nullptr, {}, nullptr}, &owner);
  auto dropped = io->submit(
      {IoJob::Kind::Write, file.fd(), {segment(0, first)}, nullptr, {}, nullptr}, &other);
  EXPECT_FALSE(t1->done()) << "a job ran while the thread was paused";
  io->cancel(&other);
  ASSERT_TRUE(dropped->done());
  EXPECT_TRUE(dropped->result().cancelled);
  EXPECT_FALSE(t3->done());
  IoThread::set_paused(false);
  io->wait(*t3);
  EXPECT_TRUE(t1->done() && t2->done()) << "a later job finished before an earlier one";
  EXPECT_FALSE(t3->result().cancelled);
  EXPECT_EQ(std::memcmp(back.data(), second.data(), 800), 0) << "the read did not see the writes";
  EXPECT_EQ(t3->result().checksums, t2->result().checksums);
}

TEST(IoThread, KeepAliveIsReleasedBeforeTheJobIsDone) {
  TempFile file;
  auto io = IoThread::acquire();
  auto buffer = std::make_shared<std::vector<double>>(values(10, 1.0));
  IoJob job{IoJob::Kind::Write, file.fd(), {segment(0, *buffer)}, buffer, {}, nullptr};
  std::weak_ptr<std::vector<double>> watch = buffer;
  buffer.reset();
  auto ticket = io->submit(std::move(job), nullptr);
  io->wait(*ticket);
  EXPECT_TRUE(watch.expired()) << "the job still held its buffer when it was reported done";
}

TEST(IoThread, OneThreadIsSharedAndItStopsWhenNothingUsesIt) {
  ASSERT_EQ(IoThread::running(), 0) << "an earlier test left the thread running";
  {
    auto a = IoThread::acquire();
    auto b = IoThread::acquire();
    EXPECT_EQ(a.get(), b.get());
    EXPECT_EQ(IoThread::running(), 1);
  }
  EXPECT_EQ(IoThread::running(), 0) << "the thread outlived its last user";
  auto c = IoThread::acquire();  // and starts again when needed
  EXPECT_EQ(IoThread::running(), 1);
}

TEST(Packing, PackAndUnpackAreInverse) {
  std::vector<double> u = values(5, 1.0), v, w = values(3, 9.0);
  const std::vector<FieldView> fields = {{"u", u, 0, 5}, {"v", v, 0, 0}, {"w", w, 2, 5}};
  std::vector<double> buffer(9, -1.0);
  pack({fields, {}}, buffer);
  EXPECT_EQ(buffer[4], u[4]);
  EXPECT_EQ(buffer[5], w[0]);
  EXPECT_EQ(buffer[8], -1.0) << "pack wrote past the fields";
  std::vector<double> u2(5), v2, w2(3);
  const std::vector<FieldSpan> spans = {{"u", u2, 0, 5}, {"v", v2, 0, 0}, {"w", w2, 2, 5}};
  unpack(buffer, {spans, {}});
  EXPECT_EQ(u2, u);
  EXPECT_EQ(w2, w);
}

TEST(Checksum, PieceByPieceEqualsTheWhole) {
  std::vector<std::byte> data(300000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 13 + 5);
  const std::span<const std::byte> all(data);
  // Across XXH3's short (<= 240 bytes), stripe (64), block (1024) and internal-buffer (256) sizes.
  for (std::size_t n : {0u, 1u, 31u, 32u, 33u, 100u, 240u, 241u, 1000u, 1025u, 300000u}) {
    const auto whole = checksum(all.first(n));
    for (std::size_t cut : {std::size_t{0}, n / 3, n / 2, n}) {
      Checksum sum;
      sum.update(all.first(cut));
      sum.update(all.subspan(cut, 0));
      sum.update(all.subspan(cut, n - cut));
      EXPECT_EQ(sum.value(), whole) << "n " << n << " cut " << cut;
    }
  }
  // Fixed values: the algorithm is the file format's.
  std::vector<double> known(10);
  for (std::size_t i = 0; i < known.size(); ++i) known[i] = static_cast<double>(i);
  EXPECT_EQ(checksum(std::span<const double>(known)), kKnownChecksum);
  std::vector<double> long_known(100000);
  for (std::size_t i = 0; i < long_known.size(); ++i) long_known[i] = 0.5 * static_cast<double>(i);
  EXPECT_EQ(checksum(std::span<const double>(long_known)), kKnownLongChecksum);
  Checksum pieces;
  const auto bytes = std::as_bytes(std::span<const double>(long_known));
  for (std::size_t at = 0; at < bytes.size(); at += 4093) {
    pieces.update(bytes.subspan(at, std::min<std::size_t>(4093, bytes.size() - at)));
  }
  EXPECT_EQ(pieces.value(), kKnownLongChecksum);
}

}  // namespace
}  // namespace rwd::storage::detail
