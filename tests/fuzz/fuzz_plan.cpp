// Fuzz target: planning a recording from hostile numbers. Any budget, step count, cost, byte
// budget or checkpoint size (NaN, infinities, negatives, huge values included) must either give
// a plan within the budget or throw rwd::Error; never crash, hang, or trip a sanitizer.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "rewind/engine/plan.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"

namespace {

struct Reader {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t at = 0;
  template <class T>
  T take() {
    T v{};
    if (at + sizeof(T) <= size) std::memcpy(&v, data + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace rwd;
  Reader r{data, size};
  const auto& list = schedule::ScheduleRegistry::instance().list();
  engine::RecordingConfig c;
  const std::uint8_t pick = r.take<std::uint8_t>();
  c.schedule = pick % (list.size() + 2) == list.size()  ? "auto"
               : pick % (list.size() + 2) > list.size() ? "no-such-schedule"
                                                        : list[pick % (list.size() + 2)].name;
  // Step counts and slots small enough that every schedule plans in milliseconds.
  c.params.steps = r.take<std::int16_t>() % 400;
  c.params.ram = r.take<std::int16_t>() % 64;
  c.params.disk =
      r.take<std::int8_t>() % 3 == 0 ? schedule::kUnlimited : r.take<std::int16_t>() % 64;
  c.params.write_cost = r.take<double>();
  c.params.read_cost = r.take<double>();
  c.params.period = r.take<std::int16_t>() % 64;
  c.ram_bytes = r.take<double>();
  c.slot_size = r.take<std::uint8_t>() % 2 ? engine::SlotSize::Any : engine::SlotSize::Restart;
  c.pullback_checkpoints = r.take<std::uint8_t>() % 2;
  c.max_steps = r.take<std::int16_t>();
  engine::CheckpointSizes sizes;
  sizes.restart = r.take<std::int32_t>();
  sizes.pullback = r.take<std::int32_t>();
  sizes.state = r.take<std::int32_t>();
  try {
    const engine::Plan plan = engine::plan_recording(c, sizes);
    // A plan never holds more than it was given: slots, or where a slot stands for a step's
    // pullback data with its end state (SlotSize::Any), that many slots' bytes of restart states
    // (docs/schedules.md, "Restart-only schedules").
    const bool by_bytes = c.slot_size == engine::SlotSize::Any && sizes.restart > 0;
    const double held = by_bytes ? static_cast<double>(plan.params.ram) * sizes.restart
                                 : static_cast<double>(plan.params.ram);
    const double given =
        static_cast<double>(std::max<std::int64_t>(c.params.ram, 0)) *
        (by_bytes ? static_cast<double>(
                        std::max(engine::any_slot_bytes(sizes, c.slot_counts_state), sizes.restart))
                  : 1.0);
    if (c.params.ram >= 0 && held > given && !(c.ram_bytes > 0 && c.params.ram == 0)) {
      std::abort();
    }
  } catch (const Error&) {
    // A clear refusal is the expected outcome for most inputs.
  }
  return 0;
}
