// The HDF5 store's file from birth to end: agreeing the settings, naming and creating the file
// with its root attributes, making room before it grows, closing it and keeping or removing it,
// and letting go of it on one rank alone.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "hdf5_store_impl.hpp"

#ifndef REWIND_VERSION
#define REWIND_VERSION "unknown"
#endif

namespace rwd::storage {

using comm::agree;
using comm::capture;
using comm::comm_rank;
using comm::comm_size;
using comm::mpi_check;
using detail::h5_check;
using detail::h5_fail;
using detail::Hid;
using detail::make_hid;
using detail::QuietHdf5;

namespace {

// The root's `format` attribute, written into every file: its words are part of format 5 and
// stay as they are (its "slot" is what the code calls a row).
constexpr const char* kFormat =
    "rewind checkpoint file, format 5. Checkpoints live in slabs: each group slab_<k> holds "
    "one dataset per field, float64 [slots, global_size], and slot j of every dataset is one "
    "checkpoint. Group attributes: slots, ranks, fields, and per slot (arrays of length slots) "
    "step, kind (0 restart: the state at the start of step <step>; 1 pullback: the data the "
    "adjoint of step <step> reads; 2 final), run, complete and scalar:<name> (e.g. the time). "
    "Dataset attributes: index (the field's position in the checkpoint), global_size, "
    "rank_offsets and rank_counts (rank r wrote rank_counts[r] values at rank_offsets[r] of "
    "its row), rank_checksums (slots * ranks values: [j * ranks + r] is the checksum of rank "
    "r's block in slot j, see the checksum attribute). The writer seals checkpoints in batches "
    "(when it flushes or closes the file): only then are a slot's rank_checksums filled in and "
    "complete set to 1, after the data is on disk; an erased slot gets complete = 0 at the "
    "next seal. A slot with complete = 0 holds no checkpoint: its data and checksums must not "
    "be used.";

// Appended to kFormat in a file whose store compresses (the root's `codec` attribute names the
// codec): format 5 and this.
constexpr const char* kCompressed =
    " Compressed blocks: each dataset has rank_stored_bytes (slots * ranks values, filled in at "
    "the seal like rank_checksums): where [j * ranks + r] > 0, rank r's block in slot j holds "
    "that many bytes of a compressed block (a rewind codec block: its 48-byte header names the "
    "codec and the value count) at the start of the rank's part of the row, and the rest of "
    "that part is unused; where it is 0 the part holds the float64 values as they are.";

constexpr const char* kChecksum =
    "XXH3-64 (xxHash 0.8, seed 0) over the little-endian float64 bytes of one rank's block: of "
    "the values it decompresses to where rank_stored_bytes says it is compressed (the compressed "
    "block's header holds an XXH3-64 of its own bytes) (formats 1 to 4 had rwd64)";

// The codec and its settings as one number, alike on ranks that pass the same.
std::int64_t codec_hash(const CodecSpec& spec) {
  using comm::setting_hash;
  std::uint64_t h = setting_hash(spec.name);
  h = setting_hash(&spec.tolerance, sizeof spec.tolerance, h);
  h = setting_hash(&spec.precision, sizeof spec.precision, h);
  return static_cast<std::int64_t>(h >> 2);  // >= 0: its negation is exact
}

}  // namespace

void Hdf5Store::Impl::open(const StoreConfig& config) {
  keep = config.keep_files;
  async = config.async_io;
  inline_io_bytes = config.inline_io_bytes;
  int initialized = 0;
  mpi_check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    throw Error(ErrorCode::Mpi, std::string(kHdf5Store) +
                                    ": MPI is not initialised; call MPI_Init (or PetscInitialize) "
                                    "before creating the store");
  }
  require(config.comm != MPI_COMM_NULL,
          std::string(kHdf5Store) + ": StoreConfig::comm is MPI_COMM_NULL; pass the solver's one");
  if (async) pool = std::make_unique<detail::StagingPool>(config.max_staged_bytes);
  mpi_check(MPI_Comm_dup(config.comm, &comm), "MPI_Comm_dup");
  mpi_check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  rank = comm_rank(comm);
  size = comm_size(comm);
  slabs = detail::SlabTable(size);
  agree_settings(config);
  name_file(config);
  try {
    create_file(config);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    fd = -1;
    shut(false);
    throw;
  }
  if (async) io = detail::IoThread::acquire();
}

void Hdf5Store::Impl::agree_settings(const StoreConfig& config) {
  // How a put moves its bytes decides how many agreements it makes, and the staging pool which
  // checkpoints are prefetched: settings that differ between ranks would pair one rank's
  // collective calls with another's.
  // So does the codec: it decides what a seal gathers and writes.
  const std::array<std::int64_t, 4> mine = {config.async_io ? 1 : 0, config.inline_io_bytes,
                                            config.max_staged_bytes, codec_hash(config.codec)};
  std::array<std::int64_t, 8> both{}, all{};
  for (std::size_t i = 0; i < 4; ++i) {
    both[i] = mine[i];
    both[4 + i] = -mine[i];
  }
  std::string differ;
  try {
    mpi_check(MPI_Allreduce(both.data(), all.data(), 8, MPI_INT64_T, MPI_MAX, comm),
              "MPI_Allreduce (store settings)");
  } catch (...) {
    MPI_Comm_free(&comm);
    throw;
  }
  const char* names[] = {"StoreConfig::async_io", "StoreConfig::inline_io_bytes",
                         "StoreConfig::max_staged_bytes", "StoreConfig::codec"};
  for (std::size_t i = 0; i < 4; ++i) {
    if (all[i] == -all[4 + i]) continue;
    differ += std::string(differ.empty() ? "" : ", ") + names[i];
    if (i < 3) differ += " (" + std::to_string(-all[4 + i]) + " to " + std::to_string(all[i]) + ")";
  }
  if (!differ.empty()) {
    MPI_Comm_free(&comm);
    throw Error(ErrorCode::InvalidArgument, std::string(kHdf5Store) +
                                                ": the ranks passed different settings: " + differ +
                                                "; every rank must pass the same");
  }
  try {
    check_codec(config.codec, std::string(kHdf5Store) + " codec");  // alike on every rank now
  } catch (...) {
    MPI_Comm_free(&comm);
    throw;
  }
  codec = config.codec;
}

void Hdf5Store::Impl::name_file(const StoreConfig& config) {
  std::optional<Error> local;
  std::string base;
  if (rank == 0) {
    local = capture([&] {
      detail::ReservedFile reserved = detail::reserve_file(config.directory, config.label);
      base = std::move(reserved.base);
      lock_fd = reserved.lock_fd;
    });
  }
  int length = static_cast<int>(base.size());
  try {
    mpi_check(MPI_Bcast(&length, 1, MPI_INT, 0, comm), "MPI_Bcast (file name)");
    base.resize(static_cast<std::size_t>(length));
    mpi_check(MPI_Bcast(base.data(), length, MPI_CHAR, 0, comm), "MPI_Bcast (file name)");
    agree(comm, local);
  } catch (...) {
    if (lock_fd >= 0) {
      ::unlink((base + ".h5.partial").c_str());
      ::close(lock_fd);
    }
    MPI_Comm_free(&comm);
    throw;
  }
  partial_path = base + ".h5.partial";
  if (rank == 0) detail::register_partial(partial_path);
  final_path = base + ".h5";
  current_path = partial_path;
  directory = std::filesystem::path(base).parent_path().string();
}

void Hdf5Store::Impl::create_file(const StoreConfig& config) {
  collective("hdf5 store: creating '" + partial_path + "'", [&] {
    // HDF5's first metadata goes in before the store can allocate room for it.
    detail::check_file_size_limit(detail::FileRoom::kMargin);
    Hid fapl = make_hid(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate(file access)");
    h5_check(H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
    // Rank 0 reads metadata and broadcasts it; metadata is written collectively.
    h5_check(H5Pset_all_coll_metadata_ops(fapl.get(), true), "H5Pset_all_coll_metadata_ops");
    h5_check(H5Pset_coll_metadata_write(fapl.get(), true), "H5Pset_coll_metadata_write");
    // 1.8+ object headers: attributes indexed by rank may exceed 64 KiB at large rank counts.
    h5_check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST),
             "H5Pset_libver_bounds");
    file = make_hid(H5Fcreate(partial_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                    H5Fclose, "H5Fcreate");
    const hid_t root = file.get();
    const bool coded = codec.name != "none";
    detail::attribute_string(root, "format", coded ? std::string(kFormat) + kCompressed : kFormat);
    detail::attribute_string(root, "checksum", kChecksum);
    if (coded) detail::attribute_string(root, "codec", codec.name);
    detail::attribute_string(root, "writer", std::string("rewind ") + REWIND_VERSION);
    detail::attribute_string(root, "label", config.label);
    detail::attribute_i64(root, "ranks", size);
    fd = ::open(partial_path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      throw Error(ErrorCode::Io,
                  "opening '" + partial_path + "' for the data failed: " + std::strerror(err));
    }
    room = detail::FileRoom(fd, rank == 0);
    room.ensure(detail::FileRoom::kMargin);
  });
}

// HDF5 has no public way to ask the MPI-IO driver where the file's allocated end (EOA) is, so it
// is bounded from what the store knows: the file's size (HDF5 extends the file to EOA when it
// flushes), the end of the last dataset extent HDF5 handed out, and a margin for metadata
// allocated beyond both and not written yet.
void Hdf5Store::Impl::make_room(std::int64_t grow, const std::string& at) {
  try {
    struct stat st {};
    const std::int64_t size_now = ::fstat(fd, &st) == 0 ? static_cast<std::int64_t>(st.st_size) : 0;
    const std::int64_t known = std::max(size_now, extents_end);
    room.ensure(known + grow + 2 * detail::FileRoom::kMargin);
  } catch (const Error& e) {
    throw Error(ErrorCode::Io, at + ": no room in '" + partial_path + "' on rank " +
                                   std::to_string(rank) + ": " + e.what() + io_hint());
  }
}

std::optional<Error> Hdf5Store::Impl::shut(bool keep_file) {
  QuietHdf5 quiet;
  std::optional<Error> result;
  const auto settle = [&](const std::optional<Error>& local) {
    try {
      agree(comm, local);
    } catch (const Error& e) {
      if (!result) result = e;
    }
  };
  if (fd >= 0) ::close(fd);  // every job has finished (close() drained the queue)
  fd = -1;
  if (!keep_file) {
    // A file that is not kept is emptied (unless it has another name) and unlinked before HDF5
    // closes it: its space comes back at once (so the metadata HDF5 still writes while closing
    // finds room on a full disk), and nothing that looks like a checkpoint file survives a failed
    // close or a crash.
    settle(std::nullopt);  // every rank is here, so no write is in flight
    std::optional<Error> removed;
    if (rank == 0) {
      removed = capture([&] {
        // A file with another name (a resumable run's link) keeps its data: only this name goes.
        if (const int err = detail::remove_file_name(partial_path); err != 0) {
          throw Error(ErrorCode::Io, std::string(kHdf5Store) + ": removing '" + partial_path +
                                         "' failed (" + std::strerror(err) + ")");
        }
      });
    }
    settle(removed);
  }
  settle(capture([&] {
    std::optional<detail::LiftFileSizeLimit> lift;
    if (!keep_file) lift.emplace();
    if (file && file.reset() < 0) h5_fail("hdf5 store: closing '" + partial_path + "'");
  }));
  if (keep_file) {
    std::optional<Error> moved;
    if (rank == 0) {
      moved = capture([&] {
        if (result) {  // closing failed: the file is not trustworthy
          ::unlink(partial_path.c_str());
          return;
        }
        detail::FileRoom::release_beyond_end(partial_path);
        if (std::rename(partial_path.c_str(), final_path.c_str()) != 0) {
          const int err = errno;
          ::unlink(partial_path.c_str());
          throw Error(ErrorCode::Io, std::string(kHdf5Store) + ": renaming '" + partial_path +
                                         "' to '" + final_path + "' failed (" + std::strerror(err) +
                                         "); the file was removed");
        }
      });
    }
    settle(moved);
    if (!result) current_path = final_path;
  }
  if (lock_fd >= 0) ::close(lock_fd);
  lock_fd = -1;
  detail::unregister_partial(partial_path);
  closed = true;
  io.reset();
  MPI_Comm_free(&comm);
  return result;
}

void Hdf5Store::Impl::discard_locally() noexcept {
  if (io) io->cancel(this);
  in_flight.clear();
  entries.clear();
  io.reset();
  if (fd >= 0) ::close(fd);
  fd = -1;
  ::unlink(partial_path.c_str());  // every such rank tries; the others find it gone
  detail::unregister_partial(partial_path);
  if (lock_fd >= 0) ::close(lock_fd);
  lock_fd = -1;
  file.forget();
  closed = true;
}

}  // namespace rwd::storage
