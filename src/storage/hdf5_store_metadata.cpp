// The HDF5 store's metadata: making a slab (its group, datasets and attributes, the room it
// needs) and sealing checkpoints (the per-row attributes and checksums written in a batch).
#include <algorithm>

#include "hdf5_store_impl.hpp"

namespace rwd::storage {

using comm::mpi_check;
using detail::h5_check;
using detail::h5_fail;
using detail::Hid;
using detail::make_hid;

std::int64_t Hdf5Store::Impl::growth_of(const CheckpointView& checkpoint, std::int64_t rows) const {
  std::int64_t bytes = 0;
  for (const auto& f : checkpoint.fields) {
    const std::int64_t per_rank = codec.name != "none" ? 16 : 8;  // checksum, stored bytes
    bytes += rows * (8 * f.global_size + per_rank * static_cast<std::int64_t>(size)) + 4096 +
             16 * static_cast<std::int64_t>(size);
  }
  return bytes + 4096 + 64 * rows * (5 + static_cast<std::int64_t>(checkpoint.scalars.size()));
}

void Hdf5Store::Impl::create_slab(detail::Slab& slab) {
  Hid group =
      make_hid(H5Gcreate2(file.get(), slab.name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               H5Gclose, "H5Gcreate2('" + slab.name + "')");
  const hid_t g = group.get();
  detail::attribute_i64(g, "slots", slab.rows);  // format 5's name: it counts rows
  detail::attribute_i64(g, "ranks", size);
  detail::attribute_i64(g, "fields", static_cast<std::int64_t>(slab.fields.size()));
  write_row_attributes(g, slab, false);
  Hid dcpl = make_hid(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate(dataset create)");
  h5_check(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), "H5Pset_layout");
  h5_check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
  // The extent must exist before any rank writes into it (see hdf5_store_impl.hpp).
  h5_check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time");
  for (std::size_t f = 0; f < slab.fields.size(); ++f) {
    const std::string& name = slab.fields[f];
    const hsize_t dims[2] = {static_cast<hsize_t>(slab.rows), static_cast<hsize_t>(slab.global[f])};
    Hid space = make_hid(H5Screate_simple(2, dims, nullptr), H5Sclose, "H5Screate_simple");
    Hid d = make_hid(H5Dcreate2(g, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT,
                                dcpl.get(), H5P_DEFAULT),
                     H5Dclose, "H5Dcreate2('" + name + "')");
    detail::attribute_i64(d.get(), "index", static_cast<std::int64_t>(f));
    detail::attribute_i64(d.get(), "global_size", slab.global[f]);
    detail::attribute_i64s(d.get(), "rank_offsets", slab.offsets[f]);
    detail::attribute_i64s(d.get(), "rank_counts", slab.counts[f]);
    detail::attribute_u64s(d.get(), "rank_checksums", slab.checksums[f]);  // at the seal
    if (codec.name != "none") detail::attribute_i64s(d.get(), "rank_stored_bytes", slab.stored[f]);
    if (slab.global[f] > 0) {  // an empty dataset has no storage
      const haddr_t address = H5Dget_offset(d.get());
      if (address == HADDR_UNDEF) h5_fail("H5Dget_offset('" + name + "')");
      slab.base[f] = static_cast<std::int64_t>(address);
      extents_end = std::max(extents_end,
                             static_cast<std::int64_t>(address) + 8 * slab.rows * slab.global[f]);
    }
  }
}

void Hdf5Store::Impl::seal() {
  // Per field of each unsealed checkpoint: its checksum and, with a codec, its stored bytes.
  const std::size_t per_field = codec.name != "none" ? 2 : 1;
  std::vector<std::uint64_t> mine;
  std::vector<Entry*> unsealed;
  for (auto& [key, e] : entries) {
    if (e.sealed) continue;
    unsealed.push_back(&e);
    for (std::size_t f = 0; f < e.checksums.size(); ++f) {
      mine.push_back(e.checksums[f]);
      if (per_field == 2) mine.push_back(static_cast<std::uint64_t>((*e.stored)[f]));
    }
  }
  if (!unsealed.empty()) {  // alike on every rank: they hold the same checkpoints
    std::vector<std::uint64_t> all(mine.size() * static_cast<std::size_t>(size));
    mpi_check(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                            static_cast<int>(mine.size()), MPI_UINT64_T, comm),
              "MPI_Allgather (checksums to seal)");
    std::size_t column = 0;
    for (Entry* e : unsealed) {
      for (std::size_t f = 0; f < e->layout.fields.size(); ++f, column += per_field) {
        for (int r = 0; r < size; ++r) {
          const std::uint64_t* at = &all[static_cast<std::size_t>(r) * mine.size() + column];
          slabs.set_checksum(e->row, f, r, at[0]);
          if (per_field == 2) slabs.set_stored(e->row, f, r, static_cast<std::int64_t>(at[1]));
        }
      }
      slabs.mark_complete(e->row);
    }
  }
  const std::int64_t changed = slabs.dirty_slabs();
  if (changed == 0) return;
  collective(std::string(kHdf5Store) + ": sealing " + std::to_string(unsealed.size()) +
                 " checkpoint(s) in " + std::to_string(changed) + " slab(s) of '" + partial_path +
                 "'",
             [&] {
               for (const detail::Slab& slab : slabs.slabs()) {
                 if (!slab.dirty) continue;
                 Hid group = make_hid(H5Gopen2(file.get(), slab.name.c_str(), H5P_DEFAULT),
                                      H5Gclose, "H5Gopen2('" + slab.name + "')");
                 write_row_attributes(group.get(), slab, true);
                 for (std::size_t f = 0; f < slab.checksums.size(); ++f) {
                   Hid d = make_hid(H5Dopen2(group.get(), slab.fields[f].c_str(), H5P_DEFAULT),
                                    H5Dclose, "H5Dopen2('" + slab.fields[f] + "')");
                   detail::rewrite_attribute_u64s(d.get(), "rank_checksums", slab.checksums[f]);
                   if (codec.name != "none") {
                     detail::rewrite_attribute_i64s(d.get(), "rank_stored_bytes", slab.stored[f]);
                   }
                 }
               }
             });
  for (Entry* e : unsealed) e->sealed = true;
  slabs.sealed();
}

void Hdf5Store::Impl::write_row_attributes(hid_t group, const detail::Slab& slab,
                                           bool rewrite) const {
  const auto i64s = rewrite ? detail::rewrite_attribute_i64s : detail::attribute_i64s;
  const auto f64s = rewrite ? detail::rewrite_attribute_f64s : detail::attribute_f64s;
  i64s(group, "step", slab.step);
  i64s(group, "kind", slab.kind);
  i64s(group, "run", slab.run);
  i64s(group, "complete", slab.complete);
  for (std::size_t k = 0; k < slab.scalars.size(); ++k) {
    f64s(group, "scalar:" + slab.scalar_names[k], slab.scalars[k]);
  }
}

}  // namespace rwd::storage
