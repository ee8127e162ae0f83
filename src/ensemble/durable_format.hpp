#pragma once
// The files an ensemble that can resume keeps in its directory (docs/ensemble.md, "Resume after
// a kill"): what each holds, written and read back. Text files end with the XXH3-64 checksum of
// the lines before ("end <hex>"); a partial sum is a binary file whose checksum its group's file
// holds. Rank-local, no MPI. Private to the ensemble layer.
//
//   rewind-ensemble-<label>.resume            the head, written by world rank 0:
//     rewind ensemble manifest 1
//     identity <hex>  label <hex>  tasks <K>  group_size <g>  groups <G>  generation <n>
//     phase forward|backward|done  [cotangents <hash>]   (one item a line)
//   rewind-ensemble-<label>.<n>.group-<q>      what group q of generation n made durable, by
//                                              its leader:
//     rewind ensemble group 1
//     generation <n>  group <q>
//     output <task> <steps> <count> <16 hex digits a value>   (the task's y, bit for bit)
//     tape <task> <checksum> ...               (its tape is durable: each rank's description,
//                                              rewind-ensemble-<label>.<n>.tape-<task>-<r>, by
//                                              its checksum; the data in .<n>.tapes-<q>.h5)
//     summed <task>                            (its gradient is in the partial sums)
//     sum <rank> <file> <length> <terms> <checksum>   (one per rank of the group)
//   rewind-ensemble-<label>.<n>.sum-<q>-<r>-<s>  rank r's partial sum after the group's s-th
//                                                summed task (ReproducibleSum's words)

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rewind/ensemble/reproducible_sum.hpp"

namespace rwd::ensemble::detail {

struct DurableHead {
  std::string identity, label;
  std::int64_t tasks = 0;
  int group_size = 0;
  int groups = 0;
  std::int64_t generation = 0;
  std::string phase = "forward";  // forward | backward | done
  std::uint64_t cotangents = 0;   // phase backward: a hash of the cotangents given
};

struct DurableOutput {
  std::int64_t steps = 0;  // the task's step count as its runner counted it
  std::vector<double> values;
};

struct DurableSum {
  int rank = 0;  // within the group
  std::string file;
  std::uint64_t length = 0, terms = 0, checksum = 0;
};

struct DurableGroup {
  std::int64_t generation = 0;
  int group = 0;
  std::map<std::int64_t, DurableOutput> outputs;
  std::map<std::int64_t, std::vector<std::uint64_t>> tapes;  // task -> each rank's checksum
  std::vector<std::int64_t> summed;                          // in the order they were summed
  std::vector<DurableSum> sums;                              // by rank, when something was summed
};

std::string head_name(const std::string& label);
std::string group_name(const std::string& label, std::int64_t generation, int group);
std::string sum_name(const std::string& label, std::int64_t generation, int group, int rank,
                     std::int64_t seq);
std::string lock_name(const std::string& label);
std::string tape_name(const std::string& label, std::int64_t generation, std::int64_t task,
                      int rank);
std::string tapes_file_name(const std::string& label, std::int64_t generation, int group);

std::string to_text(const DurableHead& head);
std::string to_text(const DurableGroup& group);
/// Throw Error(Corrupt) naming `source` and the line for anything out of place.
DurableHead parse_head(std::string_view text, const std::string& source);
DurableGroup parse_group(std::string_view text, const std::string& source, std::int64_t tasks,
                         int group_size);

/// A partial sum's file and back; parse_sum throws Error(Corrupt) naming `source` when the bytes
/// do not match `expected` (checksum, length, terms).
std::string sum_bytes(const ReproducibleSum& sum);
ReproducibleSum parse_sum(std::string_view bytes, const DurableSum& expected,
                          const std::string& source);

/// The hash a resumed backward pass compares its cotangents with.
std::uint64_t cotangents_hash(const double* values, std::size_t count);

}  // namespace rwd::ensemble::detail
