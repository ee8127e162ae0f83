#include "cotangents.hpp"

#include <algorithm>
#include <numeric>

#include "rewind/comm/agree.hpp"

namespace rwd::ensemble::detail {

using comm::mpi_check;

GroupCotangents scatter_cotangents(std::span<const double> ybar, const Outputs& outputs,
                                   const std::vector<TaskRecord>& mapping, const Groups& groups,
                                   int root) {
  // Each group's tasks in its own order, and how many cotangents each group gets.
  const int G = groups.groups();
  std::vector<std::vector<std::int64_t>> lists(static_cast<std::size_t>(G));
  for (const TaskRecord& r : mapping) lists[static_cast<std::size_t>(r.group)].push_back(r.task);
  for (auto& l : lists) {
    std::sort(l.begin(), l.end(), [&](std::int64_t a, std::int64_t b) {
      return mapping[static_cast<std::size_t>(a)].position <
             mapping[static_cast<std::size_t>(b)].position;
    });
  }
  const auto length_of = [&](std::int64_t k) {
    const auto j = static_cast<std::size_t>(k);
    return outputs.offsets[j + 1] - outputs.offsets[j];
  };
  std::vector<int> counts(static_cast<std::size_t>(groups.world_size()), 0);
  std::vector<int> displs(counts.size(), 0);
  for (int q = 0; q < G; ++q) {
    std::int64_t n = 0;
    for (std::int64_t k : lists[static_cast<std::size_t>(q)]) n += length_of(k);
    counts[static_cast<std::size_t>(groups.leader_of(q))] = static_cast<int>(n);
  }
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
  std::vector<double> send;
  if (groups.world_rank() == root) {
    send.reserve(outputs.values.size());
    for (const auto& l : lists) {
      for (std::int64_t k : l) {
        const auto j = static_cast<std::size_t>(k);
        send.insert(send.end(), ybar.begin() + outputs.offsets[j],
                    ybar.begin() + outputs.offsets[j + 1]);
      }
    }
  }
  const int q = groups.group_index();
  const int chunk = counts[static_cast<std::size_t>(groups.leader_of(q))];
  GroupCotangents out;
  out.values.resize(static_cast<std::size_t>(chunk));
  mpi_check(MPI_Scatterv(send.data(), counts.data(), displs.data(), MPI_DOUBLE, out.values.data(),
                         groups.leader() ? chunk : 0, MPI_DOUBLE, root, groups.world()),
            "MPI_Scatterv (cotangents to the groups)");
  mpi_check(MPI_Bcast(out.values.data(), chunk, MPI_DOUBLE, 0, groups.group()),
            "MPI_Bcast (cotangents within the group)");
  for (int p = 0; p < G; ++p) {
    const std::int64_t c = counts[static_cast<std::size_t>(groups.leader_of(p))];
    out.bytes += (groups.leader_of(p) == root ? 0 : c) + (groups.group_size() - 1) * c;
  }
  out.bytes *= static_cast<std::int64_t>(sizeof(double));
  out.where.resize(outputs.offsets.size());
  std::int64_t at = 0;
  for (std::int64_t k : lists[static_cast<std::size_t>(q)]) {
    out.where[static_cast<std::size_t>(k)] = {at, length_of(k)};
    at += length_of(k);
  }
  return out;
}

}  // namespace rwd::ensemble::detail
