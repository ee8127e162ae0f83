#include "rewind/engine/manifest.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>

#include "rewind/error.hpp"

namespace rwd::engine {

namespace {

// Version 2: block checksums are XXH3-64 (the HDF5 store's, format 5); version 1 had rwd64.
constexpr std::string_view kMagic = "rewind resume manifest 2";
// Bounds a manifest never exceeds, so that a damaged one cannot ask for absurd allocations.
constexpr std::int64_t kMaxRanks = 1 << 20;
constexpr std::int64_t kMaxFields = 1 << 12;
constexpr std::int64_t kMaxBlocks = 1 << 22;  // fields times ranks
constexpr std::size_t kMaxName = 4096;        // a field's or a file's name, bytes

std::string hex_of(std::string_view text) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out.empty() ? std::string("-") : out;
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::uint64_t text_checksum(std::string_view text) {
  return XXH3_64bits(text.data(), text.size());
}

const char* kind_name(bool adjoint) {
  return adjoint ? "adjoint" : "state";
}

// Reads a manifest line by line; every failure names the source and the line.
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
    if (w == "-") return {};
    if (w.size() % 2 != 0) fail("'" + std::string(w) + "' is not hexadecimal text");
    std::string out;
    for (std::size_t k = 0; k < w.size(); k += 2) {
      unsigned v = 0;
      const auto [p, ec] = std::from_chars(w.data() + k, w.data() + k + 2, v, 16);
      if (ec != std::errc() || p != w.data() + k + 2) {
        fail("'" + std::string(w) + "' is not hexadecimal text");
      }
      out += static_cast<char>(v);
    }
    return out;
  }

 private:
  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0, line_start_ = 0;
  int line_ = 0;
  std::vector<std::string_view> words_;
};

void append_entry(std::string& out, const char* kind, const ManifestEntry& e) {
  out += std::string(kind) + " " + std::to_string(e.step) + " " + hex_of(e.file) + "\n";
  for (std::size_t r = 0; r < e.blocks.size(); ++r) {
    for (std::size_t f = 0; f < e.blocks[r].size(); ++f) {
      const storage::SealedBlock& b = e.blocks[r][f];
      out += "block " + std::to_string(r) + " " + std::to_string(f) + " " + std::to_string(b.at) +
             " " + std::to_string(b.count) + " " + hex64(b.checksum) + "\n";
    }
  }
}

}  // namespace

std::string to_text(const Manifest& m) {
  std::string out(kMagic);
  out += "\nidentity " + hex_of(m.identity) + "\nlabel " + hex_of(m.label) + "\nranks " +
         std::to_string(m.ranks) + "\nsteps " + std::to_string(m.steps) + "\ninterval " +
         std::to_string(m.interval) + "\ngeneration " + std::to_string(m.generation) + "\n";
  for (bool adjoint : {false, true}) {
    const auto& fields = adjoint ? m.adjoint : m.state;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      out += "field " + std::string(kind_name(adjoint)) + " " + std::to_string(f) + " " +
             hex_of(fields[f].name) + " " + std::to_string(fields[f].global_size) + "\n";
    }
  }
  for (bool adjoint : {false, true}) {
    const auto& fields = adjoint ? m.adjoint : m.state;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      for (std::size_t r = 0; r < fields[f].offsets.size(); ++r) {
        out += "layout " + std::string(kind_name(adjoint)) + " " + std::to_string(r) + " " +
               std::to_string(f) + " " + std::to_string(fields[f].offsets[r]) + " " +
               std::to_string(fields[f].counts[r]) + "\n";
      }
    }
  }
  for (const ManifestEntry& e : m.states) append_entry(out, "state", e);
  if (m.final_state) append_entry(out, "final", *m.final_state);
  for (const ManifestEntry& e : m.reached) append_entry(out, "reached", e);
  if (m.reverse) append_entry(out, "adjoint", *m.reverse);
  out += "end " + hex64(text_checksum(out)) + "\n";
  return out;
}

Manifest parse_manifest(std::string_view text, const std::string& source) {
  Reader in(text, source);
  Manifest m;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (!in.next() || in.size() != 4 || in.word(0) != "rewind" || in.word(1) != "resume" ||
      in.word(2) != "manifest") {
    in.fail("not a rewind resume manifest (version 2)");
  }
  if (in.word(3) == "1") {
    in.fail(
        "written by an older rewind (manifest version 1, block checksums rwd64); this rewind "
        "reads version 2 (XXH3-64) only");
  }
  if (in.word(3) != "2")
    in.fail("manifest version '" + std::string(in.word(3)) + "'; this rewind reads version 2");
  // The header, in this order.
  const char* header[] = {"identity", "label", "ranks", "steps", "interval", "generation"};
  for (const char* key : header) {
    if (!in.next() || in.word(0) != key) in.fail(std::string("expected '") + key + "'");
    in.expect(2);
    const std::string_view k = key;
    if (k == "identity") m.identity = in.text(1);
    if (k == "label") m.label = in.text(1);
    if (k == "ranks") m.ranks = static_cast<int>(in.integer(1, 1, kMaxRanks));
    if (k == "steps") m.steps = in.integer(1, 1, kMax);
    if (k == "interval") m.interval = in.integer(1, 1, m.steps);
    if (k == "generation") m.generation = in.integer(1, 1, kMax);
  }
  const auto ranks = static_cast<std::size_t>(m.ranks);
  ManifestEntry* entry = nullptr;  // the entry whose blocks follow
  std::size_t entry_fields = 0;
  const auto finish_entry = [&] {
    if (!entry) return;
    for (std::size_t r = 0; r < ranks; ++r) {
      if (entry->blocks[r].size() != entry_fields) {
        in.fail("the entry at step " + std::to_string(entry->step) + " lacks blocks of rank " +
                std::to_string(r));
      }
    }
    entry = nullptr;
  };
  // Every field has a block on every rank, before the first entry and at the end.
  const auto check_layouts = [&] {
    for (const auto* fields : {&m.state, &m.adjoint}) {
      for (const ManifestField& f : *fields) {
        for (std::size_t r = 0; r < ranks; ++r) {
          if (f.offsets[r] < 0) {
            in.fail("field '" + f.name + "' has no layout for rank " + std::to_string(r));
          }
        }
      }
    }
  };
  // Which blocks of the current entry were given, [rank][field].
  std::vector<std::vector<bool>> seen;
  bool ended = false;
  while (in.next()) {
    const std::string_view key = in.word(0);
    if (key == "field") {
      in.expect(5);
      if (!m.states.empty() || m.final_state || m.reverse) in.fail("a field after the entries");
      const bool adjoint = in.word(1) == "adjoint";
      if (!adjoint && in.word(1) != "state") in.fail("a field is 'state' or 'adjoint'");
      auto& fields = adjoint ? m.adjoint : m.state;
      if (in.integer(2, 0, kMaxFields - 1) != static_cast<std::int64_t>(fields.size())) {
        in.fail("fields are numbered 0, 1, ... in order");
      }
      if (static_cast<std::int64_t>(m.state.size() + m.adjoint.size() + 1) * m.ranks > kMaxBlocks) {
        in.fail("more than " + std::to_string(kMaxBlocks) + " blocks per checkpoint");
      }
      ManifestField f;
      f.name = in.text(3);
      if (f.name.empty() || f.name.size() > kMaxName) {
        in.fail("a field's name is 1 to " + std::to_string(kMaxName) + " bytes");
      }
      f.global_size = in.integer(4, 0, kMax / 8);
      f.offsets.assign(ranks, -1);
      f.counts.assign(ranks, -1);
      fields.push_back(std::move(f));
    } else if (key == "layout") {
      in.expect(6);
      const bool adjoint = in.word(1) == "adjoint";
      if (!adjoint && in.word(1) != "state") in.fail("a layout is 'state' or 'adjoint'");
      auto& fields = adjoint ? m.adjoint : m.state;
      const auto r = static_cast<std::size_t>(in.integer(2, 0, m.ranks - 1));
      const auto f =
          static_cast<std::size_t>(in.integer(3, 0, static_cast<std::int64_t>(fields.size()) - 1));
      ManifestField& field = fields[f];
      if (field.offsets[r] >= 0) in.fail("a block laid out twice");
      field.offsets[r] = in.integer(4, 0, field.global_size);
      field.counts[r] = in.integer(5, 0, field.global_size - field.offsets[r]);
    } else if (key == "state" || key == "adjoint" || key == "reached" || key == "final") {
      in.expect(3);
      finish_entry();
      check_layouts();
      if (m.state.empty()) in.fail("an entry before any state field");
      const bool adjoint = key == "adjoint", reached = key == "reached", last = key == "final";
      if (adjoint && m.adjoint.empty()) in.fail("an adjoint entry without adjoint fields");
      if (m.reverse) in.fail("an entry after the adjoint entry");
      if (key == "state" && !m.reached.empty()) in.fail("a state after the states reached");
      if ((key == "state" || last) && m.final_state) in.fail("a state after the final state");
      if (last && !m.reached.empty()) in.fail("the final state after the states reached");
      ManifestEntry e;
      if (last) {
        // Step n: the step count, or, for a run that learns it at the end (adaptive steps),
        // where it ended, at most `steps`.
        e.step = in.integer(1, 1, m.steps);
      } else {
        e.step = in.integer(1, 0, m.steps - 1);
        if (e.step % m.interval != 0) {
          in.fail("step " + std::to_string(e.step) + " is not a multiple of the interval");
        }
        const std::vector<ManifestEntry>& before = m.reached.empty() ? m.states : m.reached;
        if (!adjoint && !before.empty() && e.step <= before.back().step) {
          in.fail("states are listed by increasing step");
        }
      }
      e.file = in.text(2);
      if (e.file.size() > kMaxName)
        in.fail("a file name over " + std::to_string(kMaxName) + " bytes");
      if (reached ? !e.file.empty()
                  : e.file.empty() || e.file.find('/') != std::string::npos || e.file == "." ||
                        e.file == "..") {
        in.fail(reached ? "a state reached names no file ('-')"
                        : "a file name is a plain name in the manifest's directory");
      }
      e.blocks.assign(ranks, {});
      if (adjoint) {
        m.reverse = std::move(e);
        entry = &*m.reverse;
      } else if (last) {
        m.final_state = std::move(e);
        entry = &*m.final_state;
      } else if (reached) {
        m.reached.push_back(std::move(e));
        entry = &m.reached.back();
      } else {
        m.states.push_back(std::move(e));
        entry = &m.states.back();
      }
      entry_fields = adjoint ? m.adjoint.size() : m.state.size();
      seen.assign(ranks, std::vector<bool>(entry_fields, false));
    } else if (key == "block") {
      in.expect(6);
      if (!entry) in.fail("a block outside an entry");
      const auto r = static_cast<std::size_t>(in.integer(1, 0, m.ranks - 1));
      const auto f =
          static_cast<std::size_t>(in.integer(2, 0, static_cast<std::int64_t>(entry_fields) - 1));
      if (seen[r][f] || entry->blocks[r].size() != f) {
        in.fail("blocks of a rank are listed once each, by field");
      }
      seen[r][f] = true;
      const bool in_adjoint = m.reverse.has_value() && entry == &*m.reverse;
      const ManifestField& field = (in_adjoint ? m.adjoint : m.state)[f];
      storage::SealedBlock b;
      b.field = field.name;
      b.at = in.integer(3, 0, kMax / 2);
      b.count = in.integer(4, 0, kMax / 16);
      if (b.count != field.counts[r]) {
        in.fail("a block of " + std::to_string(b.count) + " values where the layout has " +
                std::to_string(field.counts[r]));
      }
      b.checksum = in.hex_u64(5);
      entry->blocks[r].push_back(std::move(b));
    } else if (key == "end") {
      in.expect(2);
      finish_entry();
      check_layouts();
      const std::uint64_t want = in.hex_u64(1);
      if (want != text_checksum(text.substr(0, in.line_start()))) {
        in.fail("the manifest fails its checksum (it was changed or damaged)");
      }
      ended = true;
      if (in.next()) in.fail("a line after 'end'");
      break;
    } else {
      in.fail("unknown line '" + std::string(key) + "'");
    }
  }
  if (!ended) in.fail("no 'end' line (the file was cut short)");
  if (m.state.empty()) in.fail("no state field");
  // What a run writes: the states from x_0 on every interval, then the states reached and the
  // adjoint state from where the states stop.
  const auto order = [&](const std::string& why) {
    throw Error(ErrorCode::Corrupt, "resume manifest '" + source + "': " + why);
  };
  for (std::size_t i = 0; i < m.states.size(); ++i) {
    if (m.states[i].step != static_cast<std::int64_t>(i) * m.interval) {
      order("the states are not x_0 and every interval after it: step " +
            std::to_string(m.states[i].step) + " is listed " + std::to_string(i + 1) + "th");
    }
  }
  const std::int64_t below = static_cast<std::int64_t>(m.states.size()) * m.interval;
  if (!m.reverse && !m.reached.empty()) order("states reached are listed without an adjoint state");
  if (m.reverse && m.reverse->step != below) {
    order("the adjoint state is at step " + std::to_string(m.reverse->step) +
          ", not where the states stop (" + std::to_string(below) + ")");
  }
  for (std::size_t i = 0; i < m.reached.size(); ++i) {
    if (m.reached[i].step != below + static_cast<std::int64_t>(i) * m.interval) {
      order("the states reached do not follow the states every interval");
    }
  }
  if (m.final_state) {
    for (const auto* list : {&m.states, &m.reached}) {
      if (!list->empty() && list->back().step >= m.final_state->step) {
        order("the final state (step " + std::to_string(m.final_state->step) +
              ") is not after the states");
      }
    }
    if (m.reverse && m.reverse->step >= m.final_state->step) {
      order("the adjoint state is not before the final state");
    }
  }
  return m;
}

namespace {

// An identity's parts: its ';'-separated segments, each split further before every token that
// looks like an option name ("-x ..."), so that two identities made of options can be told
// apart by the options that differ.
std::vector<std::string> identity_parts(const std::string& identity) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at <= identity.size()) {
    const std::size_t end = std::min(identity.find(';', at), identity.size());
    std::string part;
    std::size_t t = at;
    while (t < end) {
      const std::size_t stop = std::min(identity.find(' ', t), end);
      const std::string token = identity.substr(t, stop - t);
      const bool option = token.size() > 1 && token[0] == '-' &&
                          !(token[1] >= '0' && token[1] <= '9') && token[1] != '.';
      if (option && !part.empty()) {
        parts.push_back(part);
        part.clear();
      }
      if (!token.empty()) part += (part.empty() ? "" : " ") + token;
      t = stop + 1;
    }
    if (!part.empty()) parts.push_back(part);
    at = end + 1;
  }
  return parts;
}

// "'a', 'b'": the parts of `a` that `b` lacks (at most four named), or "nothing".
std::string only_in(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::string out;
  int shown = 0;
  for (const std::string& p : a) {
    if (std::find(b.begin(), b.end(), p) != b.end()) continue;
    if (shown++ == 4) {
      out += ", ...";
      break;
    }
    out += (out.empty() ? "'" : ", '") + p + "'";
  }
  return out.empty() ? "nothing" : out;
}

}  // namespace

std::vector<std::string> differences(const Manifest& saved, const Manifest& now) {
  std::vector<std::string> out;
  if (saved.label != now.label) {
    out.push_back("the label (StoreConfig::label) was '" + saved.label + "', is '" + now.label +
                  "'");
  }
  if (saved.identity != now.identity) {
    const std::string what =
        "the identity (the program, its options and integrator in PETSc; ResumeConfig::identity "
        "in C++) ";
    const std::vector<std::string> a = identity_parts(saved.identity),
                                   b = identity_parts(now.identity);
    if (saved.identity.size() + now.identity.size() < 160 || a.size() < 2 || b.size() < 2) {
      out.push_back(what + "was '" + saved.identity + "', is '" + now.identity + "'");
    } else {
      out.push_back(what + "differs: only the killed run's has " + only_in(a, b) +
                    "; only this run's has " + only_in(b, a));
    }
  }
  const auto number = [&](const char* what, std::int64_t a, std::int64_t b) {
    if (a != b) {
      out.push_back(std::string(what) + " was " + std::to_string(a) + ", is " + std::to_string(b));
    }
  };
  number("the rank count", saved.ranks, now.ranks);
  number("the step count", saved.steps, now.steps);
  number("the interval", saved.interval, now.interval);
  for (bool adjoint : {false, true}) {
    const auto& a = adjoint ? saved.adjoint : saved.state;
    const auto& b = adjoint ? now.adjoint : now.state;
    if (adjoint && b.empty()) continue;  // not known yet (DurableLog::set_adjoint_layout())
    const std::string kind = adjoint ? "adjoint state" : "state";
    if (a.size() != b.size()) {
      out.push_back("the " + kind + " had " + std::to_string(a.size()) + " fields, has " +
                    std::to_string(b.size()));
      continue;
    }
    for (std::size_t f = 0; f < a.size(); ++f) {
      if (a[f].name != b[f].name) {
        out.push_back(kind + " field " + std::to_string(f) + " was '" + a[f].name + "', is '" +
                      b[f].name + "'");
      } else if (a[f].global_size != b[f].global_size) {
        out.push_back(kind + " field '" + a[f].name + "' had " + std::to_string(a[f].global_size) +
                      " values, has " + std::to_string(b[f].global_size));
      } else if (a[f].offsets != b[f].offsets || a[f].counts != b[f].counts) {
        out.push_back(kind + " field '" + a[f].name + "' is split over the ranks differently");
      }
    }
  }
  return out;
}

}  // namespace rwd::engine
