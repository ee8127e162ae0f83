// A separate project using an installed rewind.
#include <cstdio>

#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"

int main() {
  rwd::schedule::ScheduleParams p;
  p.steps = 10;
  p.ram = 2;
  auto s = rwd::schedule::make_schedule("revolve", p);
  const auto r = rwd::schedule::simulate(*s, p);
  std::printf("revolve n=10 s=2 fwd_total=%lld\n", static_cast<long long>(r.fwd_total));
  return r.fwd_total == 30 ? 0 : 1;
}
