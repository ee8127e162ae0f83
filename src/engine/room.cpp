#include "rewind/engine/room.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "rewind/error.hpp"

namespace rwd::engine {

namespace {

// The recordings make_room() works on, and what it has tried on them.
class Room {
 public:
  Room(Stores& stores, std::vector<HeldRecording>& held, const RoomHooks& hooks,
       std::int64_t except)
      : stores_(stores), held_(held), hooks_(hooks), except_(except) {}

  bool act(RoomStep step) {
    switch (step) {
      case RoomStep::Thin:
        return thin();
      case RoomStep::Spill:
        return spill();
      case RoomStep::Cut:
        return cut();
    }
    return false;
  }

 private:
  // The held recordings still there (not the one the room is for), oldest first.
  std::vector<HeldRecording*> oldest_first() {
    std::vector<HeldRecording*> out;
    for (HeldRecording& h : held_) {
      if (h.recording && h.recording->id() != except_) out.push_back(&h);
    }
    std::stable_sort(out.begin(), out.end(), [](const HeldRecording* a, const HeldRecording* b) {
      return a->order < b->order;
    });
    return out;
  }

  bool thin() {
    for (HeldRecording* h : oldest_first()) {
      if (h->whole || h->recording->thinned() || !tried_thin_.insert(h->owner).second) continue;
      try {
        h->recording->thin(false);
        if (hooks_.thinned) hooks_.thinned(h->owner);
      } catch (const Error& e) {
        // Its schedule kept no restart checkpoint to thin down to (store-all): it stays whole.
        if (e.code() != ErrorCode::InvalidArgument) throw;
      }
      return true;
    }
    return false;
  }

  // As many of the oldest recording's RAM checkpoints as the disk capacity takes next to what
  // it holds there.
  bool spill() {
    if (stores_.config().disk == 0) return false;
    for (HeldRecording* h : oldest_first()) {
      const Claim held = h->recording->claim();
      if (held.ram == 0) continue;
      const std::int64_t free = stores_.available(h->recording->id()).disk;
      const std::int64_t k =
          free == schedule::kUnlimited ? held.ram : std::min(held.ram, free - held.disk);
      if (k <= 0) continue;
      h->recording->spill(k);
      h->spilled = true;
      if (hooks_.spilled) hooks_.spilled(h->owner);
      return true;
    }
    return false;
  }

  bool cut() {
    HeldRecording* victim = nullptr;
    for (HeldRecording* h : oldest_first()) {
      if (!h->whole && (!victim || h->steps < victim->steps)) victim = h;
    }
    if (!victim) return false;
    hooks_.cut(victim->owner);
    victim->recording = nullptr;
    stores_.collect();
    return true;
  }

  Stores& stores_;
  std::vector<HeldRecording>& held_;
  const RoomHooks& hooks_;
  std::int64_t except_;
  std::set<std::int64_t> tried_thin_;
};

}  // namespace

bool make_room(Stores& stores, std::vector<HeldRecording>& held, std::span<const RoomStep> steps,
               const std::function<bool()>& enough, const RoomHooks& hooks, std::int64_t except) {
  Room room(stores, held, hooks, except);
  while (!enough()) {
    bool acted = false;
    for (RoomStep step : steps) {
      if (room.act(step)) {
        acted = true;
        break;
      }
    }
    if (!acted) return false;
  }
  return true;
}

std::vector<std::int64_t> reverse_order(std::vector<HeldRecording> held) {
  const auto rank = [](const HeldRecording& h) {
    const int where = !h.recording ? 2 : h.spilled ? 1 : 0;
    return std::pair{where, -h.order};
  };
  std::stable_sort(held.begin(), held.end(), [&](const HeldRecording& a, const HeldRecording& b) {
    return rank(a) < rank(b);
  });
  std::vector<std::int64_t> out;
  out.reserve(held.size());
  for (const HeldRecording& h : held) out.push_back(h.owner);
  return out;
}

}  // namespace rwd::engine
