#pragma once
// Lets the calling thread run on every online CPU. mpirun binds a test rank to one core at 1
// and 2 ranks, where the RAM store keeps its codec on the caller's thread (an I/O thread bound
// to the same core would only take turns with it); tests of the codec behind the caller widen
// the binding first.

#include <sched.h>
#include <unistd.h>

namespace rwd::test_support {

/// True once the calling thread may run on every online CPU; false on a machine with one CPU
/// (or if the kernel refuses).
inline bool on_every_cpu() {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  CPU_ZERO(&set);
  for (long c = 0; c < online && c < CPU_SETSIZE; ++c) CPU_SET(static_cast<int>(c), &set);
  return online >= 2 && sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace rwd::test_support
