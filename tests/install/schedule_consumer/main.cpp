// A separate project using an installed rewind::schedule (and rewind::core through it).
#include <cstdio>
#include <cstring>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"

int main() {
  rwd::schedule::ScheduleParams p;
  p.steps = 10;
  p.ram = 2;
  auto s = rwd::schedule::make_schedule("revolve", p);
  const auto r = rwd::schedule::simulate(*s, p);
  std::printf("revolve n=10 s=2 fwd_total=%lld\n", static_cast<long long>(r.fwd_total));
  // rwd::Error thrown inside the library is caught here as itself; to_string is in rewind::core.
  bool caught = false;
  try {
    rwd::schedule::make_schedule("no-such-schedule", p);
  } catch (const rwd::Error& e) {
    caught = e.code() == rwd::ErrorCode::InvalidArgument;
    std::printf("core: %s: %s\n", rwd::to_string(e.code()), e.what());
  }
  const bool named = std::strcmp(rwd::to_string(rwd::ErrorCode::Io), "I/O error") == 0;
  return r.fwd_total == 30 && caught && named ? 0 : 1;
}
