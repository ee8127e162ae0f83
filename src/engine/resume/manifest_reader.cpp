#include <charconv>
#include <limits>
#include <vector>

#include "manifest_format.hpp"
#include "rewind/engine/manifest.hpp"
#include "rewind/error.hpp"

namespace rwd::engine {

namespace {

using namespace detail;  // manifest_format.hpp

// A manifest's lines and words; every failure names the source and the line.
class Reader {
 public:
  Reader(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(ErrorCode::Corrupt,
                "resume manifest '" + source_ + "', line " + std::to_string(line_) + ": " + why);
  }

  bool next() {
    if (pos_ >= text_.size()) return false;
    const std::size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) {
      line_start_ = pos_;
      ++line_;
      fail("the last line has no newline (the file was cut short)");
    }
    line_start_ = pos_;
    words_.clear();
    std::string_view line = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++line_;
    std::size_t i = 0;
    while (i < line.size()) {
      const std::size_t j = line.find(' ', i);
      const std::size_t stop = j == std::string_view::npos ? line.size() : j;
      if (stop == i) fail("two spaces in a row");
      words_.push_back(line.substr(i, stop - i));
      i = stop == line.size() ? stop : stop + 1;
      if (stop != line.size() && i == line.size()) fail("a space at the end of the line");
    }
    if (words_.empty()) fail("an empty line");
    return true;
  }

  std::string_view word(std::size_t i) const { return words_[i]; }
  std::size_t size() const { return words_.size(); }
  std::size_t line_start() const { return line_start_; }
  void expect(std::size_t n) const {
    if (words_.size() != n) {
      fail("'" + std::string(words_[0]) + "' takes " + std::to_string(n - 1) + " values, not " +
           std::to_string(words_.size() - 1));
    }
  }

  std::int64_t integer(std::size_t i, std::int64_t lo, std::int64_t hi) const {
    const std::string_view w = words_[i];
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
    if (ec != std::errc() || p != w.data() + w.size()) {
      fail("'" + std::string(w) + "' is not an integer");
    }
    if (v < lo || v > hi) {
      fail(std::string(words_[0]) + ": " + std::to_string(v) + " is out of range [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return v;
  }

  std::uint64_t hex_u64(std::size_t i) const {
    const std::string_view w = words_[i];
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), v, 16);
    if (w.size() != 16 || ec != std::errc() || p != w.data() + w.size()) {
      fail("'" + std::string(w) + "' is not a 16-digit hexadecimal checksum");
    }
    return v;
  }

  std::string text(std::size_t i) const {
    const std::string_view w = words_[i];
    std::optional<std::string> out = text_of_hex(w);
    if (!out) fail("'" + std::string(w) + "' is not hexadecimal text");
    return *out;
  }

 private:
  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0, line_start_ = 0;
  int line_ = 0;
  std::vector<std::string_view> words_;
};

}  // namespace

namespace {

// A manifest read line by line into `m`, each kind of line checked where it is read.
class Parser {
 public:
  Parser(std::string_view text, const std::string& source)
      : text_(text), source_(source), in_(text, source) {}

  Manifest parse() {
    header();
    while (in_.next()) {
      const std::string_view key = in_.word(0);
      if (key == "field") {
        field();
      } else if (key == "layout") {
        layout();
      } else if (key == "state" || key == "adjoint" || key == "reached" || key == "final") {
        entry(key);
      } else if (key == "block") {
        block();
      } else if (key == "end") {
        end();
        break;
      } else {
        in_.fail("unknown line '" + std::string(key) + "'");
      }
    }
    if (!ended_) in_.fail("no 'end' line (the file was cut short)");
    if (m_.state.empty()) in_.fail("no state field");
    check_order();
    return std::move(m_);
  }

 private:
  static constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  bool compressed_ = false;  // version 3: block lines may give a compressed block's bytes

  void header() {
    if (!in_.next() || in_.size() != 4 || in_.word(0) != "rewind" || in_.word(1) != "resume" ||
        in_.word(2) != "manifest") {
      in_.fail("not a rewind resume manifest (version 2)");
    }
    if (in_.word(3) == "1") {
      in_.fail(
          "written by an older rewind (manifest version 1, block checksums rwd64); this rewind "
          "reads version 2 (XXH3-64) only");
    }
    if (in_.word(3) != "2" && in_.word(3) != "3") {
      in_.fail("manifest version '" + std::string(in_.word(3)) +
               "'; this rewind reads versions 2 and 3 (3: with compressed blocks)");
    }
    compressed_ = in_.word(3) == "3";
    // The header, in this order.
    const char* keys[] = {"identity", "label", "ranks", "steps", "interval", "generation"};
    for (const char* key : keys) {
      if (!in_.next() || in_.word(0) != key) in_.fail(std::string("expected '") + key + "'");
      in_.expect(2);
      const std::string_view k = key;
      if (k == "identity") m_.identity = in_.text(1);
      if (k == "label") m_.label = in_.text(1);
      if (k == "ranks") m_.ranks = static_cast<int>(in_.integer(1, 1, kMaxRanks));
      if (k == "steps") m_.steps = in_.integer(1, 1, kMax);
      if (k == "interval") m_.interval = in_.integer(1, 1, m_.steps);
      if (k == "generation") m_.generation = in_.integer(1, 1, kMax);
    }
    ranks_ = static_cast<std::size_t>(m_.ranks);
  }

  void field() {
    in_.expect(5);
    if (!m_.states.empty() || m_.final_state || m_.reverse) in_.fail("a field after the entries");
    const bool adjoint = in_.word(1) == "adjoint";
    if (!adjoint && in_.word(1) != "state") in_.fail("a field is 'state' or 'adjoint'");
    auto& fields = adjoint ? m_.adjoint : m_.state;
    if (in_.integer(2, 0, kMaxFields - 1) != static_cast<std::int64_t>(fields.size())) {
      in_.fail("fields are numbered 0, 1, ... in order");
    }
    if (static_cast<std::int64_t>(m_.state.size() + m_.adjoint.size() + 1) * m_.ranks >
        kMaxBlocks) {
      in_.fail("more than " + std::to_string(kMaxBlocks) + " blocks per checkpoint");
    }
    ManifestField f;
    f.name = in_.text(3);
    if (f.name.empty() || f.name.size() > kMaxName) {
      in_.fail("a field's name is 1 to " + std::to_string(kMaxName) + " bytes");
    }
    f.global_size = in_.integer(4, 0, kMax / 8);
    f.offsets.assign(ranks_, -1);
    f.counts.assign(ranks_, -1);
    fields.push_back(std::move(f));
  }

  void layout() {
    in_.expect(6);
    const bool adjoint = in_.word(1) == "adjoint";
    if (!adjoint && in_.word(1) != "state") in_.fail("a layout is 'state' or 'adjoint'");
    auto& fields = adjoint ? m_.adjoint : m_.state;
    const auto r = static_cast<std::size_t>(in_.integer(2, 0, m_.ranks - 1));
    const auto f =
        static_cast<std::size_t>(in_.integer(3, 0, static_cast<std::int64_t>(fields.size()) - 1));
    ManifestField& field = fields[f];
    if (field.offsets[r] >= 0) in_.fail("a block laid out twice");
    field.offsets[r] = in_.integer(4, 0, field.global_size);
    field.counts[r] = in_.integer(5, 0, field.global_size - field.offsets[r]);
  }

  // The entry whose blocks were being listed has one on every rank.
  void finish_entry() {
    if (!entry_) return;
    for (std::size_t r = 0; r < ranks_; ++r) {
      if (entry_->blocks[r].size() != entry_fields_) {
        in_.fail("the entry at step " + std::to_string(entry_->step) + " lacks blocks of rank " +
                 std::to_string(r));
      }
    }
    entry_ = nullptr;
  }

  // Every field has a block on every rank, before the first entry and at the end.
  void check_layouts() const {
    for (const auto* fields : {&m_.state, &m_.adjoint}) {
      for (const ManifestField& f : *fields) {
        for (std::size_t r = 0; r < ranks_; ++r) {
          if (f.offsets[r] < 0) {
            in_.fail("field '" + f.name + "' has no layout for rank " + std::to_string(r));
          }
        }
      }
    }
  }

  // Where a new entry goes in the manifest, by its kind; it becomes the current entry.
  void place(ManifestEntry e, bool adjoint, bool last, bool reached) {
    if (adjoint) {
      m_.reverse = std::move(e);
      entry_ = &*m_.reverse;
    } else if (last) {
      m_.final_state = std::move(e);
      entry_ = &*m_.final_state;
    } else if (reached) {
      m_.reached.push_back(std::move(e));
      entry_ = &m_.reached.back();
    } else {
      m_.states.push_back(std::move(e));
      entry_ = &m_.states.back();
    }
    entry_fields_ = adjoint ? m_.adjoint.size() : m_.state.size();
    seen_.assign(ranks_, std::vector<bool>(entry_fields_, false));
  }

  void entry(std::string_view key) {
    in_.expect(3);
    finish_entry();
    check_layouts();
    if (m_.state.empty()) in_.fail("an entry before any state field");
    const bool adjoint = key == "adjoint", reached = key == "reached", last = key == "final";
    if (adjoint && m_.adjoint.empty()) in_.fail("an adjoint entry without adjoint fields");
    if (m_.reverse) in_.fail("an entry after the adjoint entry");
    if (key == "state" && !m_.reached.empty()) in_.fail("a state after the states reached");
    if ((key == "state" || last) && m_.final_state) in_.fail("a state after the final state");
    if (last && !m_.reached.empty()) in_.fail("the final state after the states reached");
    ManifestEntry e;
    if (last) {
      // Step n: the step count, or, for a run that learns it at the end (adaptive steps), where
      // it ended, at most `steps`.
      e.step = in_.integer(1, 1, m_.steps);
    } else {
      e.step = in_.integer(1, 0, m_.steps - 1);
      if (e.step % m_.interval != 0) {
        in_.fail("step " + std::to_string(e.step) + " is not a multiple of the interval");
      }
      const std::vector<ManifestEntry>& before = m_.reached.empty() ? m_.states : m_.reached;
      if (!adjoint && !before.empty() && e.step <= before.back().step) {
        in_.fail("states are listed by increasing step");
      }
    }
    e.file = in_.text(2);
    if (e.file.size() > kMaxName)
      in_.fail("a file name over " + std::to_string(kMaxName) + " bytes");
    if (reached ? !e.file.empty()
                : e.file.empty() || e.file.find('/') != std::string::npos || e.file == "." ||
                      e.file == "..") {
      in_.fail(reached ? "a state reached names no file ('-')"
                       : "a file name is a plain name in the manifest's directory");
    }
    e.blocks.assign(ranks_, {});
    place(std::move(e), adjoint, last, reached);
  }

  void block() {
    if (!compressed_ || in_.size() != 7) in_.expect(6);  // version 3: a compressed block's bytes
    if (!entry_) in_.fail("a block outside an entry");
    const auto r = static_cast<std::size_t>(in_.integer(1, 0, m_.ranks - 1));
    const auto f =
        static_cast<std::size_t>(in_.integer(2, 0, static_cast<std::int64_t>(entry_fields_) - 1));
    if (seen_[r][f] || entry_->blocks[r].size() != f) {
      in_.fail("blocks of a rank are listed once each, by field");
    }
    seen_[r][f] = true;
    const bool in_adjoint = m_.reverse.has_value() && entry_ == &*m_.reverse;
    const ManifestField& field = (in_adjoint ? m_.adjoint : m_.state)[f];
    storage::SealedBlock b;
    b.field = field.name;
    b.at = in_.integer(3, 0, kMax / 2);
    b.count = in_.integer(4, 0, kMax / 16);
    if (b.count != field.counts[r]) {
      in_.fail("a block of " + std::to_string(b.count) + " values where the layout has " +
               std::to_string(field.counts[r]));
    }
    b.checksum = in_.hex_u64(5);
    if (in_.size() == 7) b.stored = in_.integer(6, 1, kMax / 2);
    entry_->blocks[r].push_back(std::move(b));
  }

  void end() {
    in_.expect(2);
    finish_entry();
    check_layouts();
    const std::uint64_t want = in_.hex_u64(1);
    if (want != text_checksum(text_.substr(0, in_.line_start()))) {
      in_.fail("the manifest fails its checksum (it was changed or damaged)");
    }
    ended_ = true;
    if (in_.next()) in_.fail("a line after 'end'");
  }

  // What a run writes: the states from x_0 on every interval, then the states reached and the
  // adjoint state from where the states stop.
  void check_order() const {
    const auto order = [&](const std::string& why) {
      throw Error(ErrorCode::Corrupt, "resume manifest '" + source_ + "': " + why);
    };
    for (std::size_t i = 0; i < m_.states.size(); ++i) {
      if (m_.states[i].step != static_cast<std::int64_t>(i) * m_.interval) {
        order("the states are not x_0 and every interval after it: step " +
              std::to_string(m_.states[i].step) + " is listed " + std::to_string(i + 1) + "th");
      }
    }
    const std::int64_t below = static_cast<std::int64_t>(m_.states.size()) * m_.interval;
    if (!m_.reverse && !m_.reached.empty()) {
      order("states reached are listed without an adjoint state");
    }
    if (m_.reverse && m_.reverse->step != below) {
      order("the adjoint state is at step " + std::to_string(m_.reverse->step) +
            ", not where the states stop (" + std::to_string(below) + ")");
    }
    for (std::size_t i = 0; i < m_.reached.size(); ++i) {
      if (m_.reached[i].step != below + static_cast<std::int64_t>(i) * m_.interval) {
        order("the states reached do not follow the states every interval");
      }
    }
    if (!m_.final_state) return;
    for (const auto* list : {&m_.states, &m_.reached}) {
      if (!list->empty() && list->back().step >= m_.final_state->step) {
        order("the final state (step " + std::to_string(m_.final_state->step) +
              ") is not after the states");
      }
    }
    if (m_.reverse && m_.reverse->step >= m_.final_state->step) {
      order("the adjoint state is not before the final state");
    }
  }

  std::string_view text_;
  const std::string& source_;
  Reader in_;
  Manifest m_;
  std::size_t ranks_ = 0;
  ManifestEntry* entry_ = nullptr;  // the entry whose blocks follow
  std::size_t entry_fields_ = 0;
  std::vector<std::vector<bool>> seen_;  // the current entry's blocks given, [rank][field]
  bool ended_ = false;
};

}  // namespace

Manifest parse_manifest(std::string_view text, const std::string& source) {
  return Parser(text, source).parse();
}

}  // namespace rwd::engine
