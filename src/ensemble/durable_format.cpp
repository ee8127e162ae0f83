#include "durable_format.hpp"

#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>

#include "rewind/engine/durable_files.hpp"
#include "rewind/error.hpp"

namespace rwd::ensemble::detail {

namespace {

constexpr std::string_view kHeadMagic = "rewind ensemble manifest 1";
constexpr std::string_view kGroupMagic = "rewind ensemble group 1";
constexpr char kSumMagic[8] = {'R', 'W', 'D', 'S', 'U', 'M', '1', '\0'};
constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;

std::string prefix(const std::string& label) {
  return "rewind-ensemble-" + engine::file_label(label);
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// "rewind-ensemble-<label>.*" for a file of the ensemble's, from its path.
std::string files_hint(const std::string& source) {
  const std::string name = source.substr(source.find_last_of('/') + 1);
  return name.substr(0, name.find('.')) + ".*";
}

// The text with its checksum line.
std::string sealed(std::string body) {
  body += "end " + hex64(engine::durable_checksum(body)) + "\n";
  return body;
}

// Reads a manifest line by line; every complaint names the file and the line.
class Lines {
 public:
  Lines(std::string_view text, const std::string& source) : text_(text), source_(source) {
    const std::size_t end = text.rfind("\nend ");
    if (end == std::string_view::npos) fail("no checksum line (a file cut short?)");
    const std::string_view body = text.substr(0, end + 1);
    std::string_view last = text.substr(end + 5);
    if (!last.empty() && last.back() == '\n') last.remove_suffix(1);
    if (last != hex64(engine::durable_checksum(body))) {
      fail("its checksum does not match its text (the file was changed or damaged)");
    }
    text_ = body;
  }
  bool done() const { return at_ >= text_.size(); }
  // The next line's words.
  std::vector<std::string> next() {
    ++line_;
    const std::size_t end = text_.find('\n', at_);
    const std::string_view line = text_.substr(at_, end - at_);
    at_ = end + 1;
    std::vector<std::string> words;
    std::istringstream in{std::string(line)};
    for (std::string w; in >> w;) words.push_back(w);
    if (words.empty()) fail("an empty line");
    return words;
  }
  std::vector<std::string> expect(const char* key, std::size_t count) {
    std::vector<std::string> w = next();
    if (w[0] != key || w.size() != count + 1) {
      fail(std::string("expected '") + key + "' with " + std::to_string(count) + " values");
    }
    return w;
  }
  std::int64_t number(const std::string& word, std::int64_t low, std::int64_t high) const {
    std::int64_t v = 0;
    std::size_t used = 0;
    try {
      v = std::stoll(word, &used);
    } catch (...) {
      used = 0;
    }
    if (used != word.size() || word.empty() || v < low || v > high) {
      fail("'" + word + "' is not a number from " + std::to_string(low) + " to " +
           std::to_string(high));
    }
    return v;
  }
  std::uint64_t hex(const std::string& word) const {
    if (word.size() != 16 || word.find_first_not_of("0123456789abcdef") != std::string::npos) {
      fail("'" + word + "' is not 16 hex digits");
    }
    return std::stoull(word, nullptr, 16);
  }
  std::string text(const std::string& word) const {
    std::optional<std::string> out = engine::text_of_hex(word);
    if (!out) fail("'" + word.substr(0, 40) + "' is not hex text");
    return *out;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::Corrupt,
                "ensemble resume: " + source_ +
                    (line_ ? ": line " + std::to_string(line_) : std::string()) + ": " + what +
                    "; the manifest cannot be used (remove the ensemble's files, " +
                    files_hint(source_) + ", to start again)");
  }

 private:
  std::string_view text_;
  std::string source_;
  std::size_t at_ = 0;
  int line_ = 0;
};

}  // namespace

std::string head_name(const std::string& label) {
  return prefix(label) + ".resume";
}
std::string group_name(const std::string& label, std::int64_t generation, int group) {
  return prefix(label) + "." + std::to_string(generation) + ".group-" + std::to_string(group);
}
std::string sum_name(const std::string& label, std::int64_t generation, int group, int rank,
                     std::int64_t seq) {
  return prefix(label) + "." + std::to_string(generation) + ".sum-" + std::to_string(group) + "-" +
         std::to_string(rank) + "-" + std::to_string(seq);
}
std::string lock_name(const std::string& label) {
  return prefix(label) + ".lock";
}
std::string tape_name(const std::string& label, std::int64_t generation, std::int64_t task,
                      int rank) {
  return prefix(label) + "." + std::to_string(generation) + ".tape-" + std::to_string(task) + "-" +
         std::to_string(rank);
}
std::string tapes_file_name(const std::string& label, std::int64_t generation, int group) {
  return prefix(label) + "." + std::to_string(generation) + ".tapes-" + std::to_string(group) +
         ".h5";
}

std::string to_text(const DurableHead& h) {
  std::string out = std::string(kHeadMagic) + "\n";
  out += "identity " + engine::hex_text(h.identity) + "\n";
  out += "label " + engine::hex_text(h.label) + "\n";
  out += "tasks " + std::to_string(h.tasks) + "\n";
  out += "group_size " + std::to_string(h.group_size) + "\n";
  out += "groups " + std::to_string(h.groups) + "\n";
  out += "generation " + std::to_string(h.generation) + "\n";
  out += "phase " + h.phase + "\n";
  if (h.phase == "backward") out += "cotangents " + hex64(h.cotangents) + "\n";
  return sealed(std::move(out));
}

std::string to_text(const DurableGroup& g) {
  std::string out = std::string(kGroupMagic) + "\n";
  out += "generation " + std::to_string(g.generation) + "\n";
  out += "group " + std::to_string(g.group) + "\n";
  for (const auto& [k, o] : g.outputs) {
    out += "output " + std::to_string(k) + " " + std::to_string(o.steps) + " " +
           std::to_string(o.values.size()) + " ";
    for (double v : o.values) out += hex64(std::bit_cast<std::uint64_t>(v));
    if (o.values.empty()) out += "-";
    out += "\n";
  }
  for (const auto& [k, sums] : g.tapes) {
    out += "tape " + std::to_string(k);
    for (std::uint64_t c : sums) out += " " + hex64(c);
    out += "\n";
  }
  for (std::int64_t k : g.summed) out += "summed " + std::to_string(k) + "\n";
  for (const DurableSum& s : g.sums) {
    out += "sum " + std::to_string(s.rank) + " " + s.file + " " + std::to_string(s.length) + " " +
           std::to_string(s.terms) + " " + hex64(s.checksum) + "\n";
  }
  return sealed(std::move(out));
}

DurableHead parse_head(std::string_view text, const std::string& source) {
  Lines in(text, source);
  const std::vector<std::string> magic = in.next();
  std::string first;
  for (const std::string& w : magic) first += (first.empty() ? "" : " ") + w;
  if (first != kHeadMagic) in.fail("not an ensemble manifest ('" + first + "')");
  DurableHead h;
  h.identity = in.text(in.expect("identity", 1)[1]);
  h.label = in.text(in.expect("label", 1)[1]);
  h.tasks = in.number(in.expect("tasks", 1)[1], 0, kMaxCount);
  h.group_size = static_cast<int>(in.number(in.expect("group_size", 1)[1], 1, 1 << 24));
  h.groups = static_cast<int>(in.number(in.expect("groups", 1)[1], 1, 1 << 24));
  h.generation = in.number(in.expect("generation", 1)[1], 1, kMaxCount);
  h.phase = in.expect("phase", 1)[1];
  if (h.phase != "forward" && h.phase != "backward" && h.phase != "done") {
    in.fail("unknown phase '" + h.phase + "'");
  }
  if (h.phase == "backward") h.cotangents = in.hex(in.expect("cotangents", 1)[1]);
  if (!in.done()) in.fail("more lines than a manifest has");
  return h;
}

DurableGroup parse_group(std::string_view text, const std::string& source, std::int64_t tasks,
                         int group_size) {
  Lines in(text, source);
  const std::vector<std::string> magic = in.next();
  std::string first;
  for (const std::string& w : magic) first += (first.empty() ? "" : " ") + w;
  if (first != kGroupMagic) in.fail("not an ensemble group file ('" + first + "')");
  DurableGroup g;
  g.generation = in.number(in.expect("generation", 1)[1], 1, kMaxCount);
  g.group = static_cast<int>(in.number(in.expect("group", 1)[1], 0, 1 << 24));
  while (!in.done()) {
    const std::vector<std::string> w = in.next();
    if (w[0] == "output" && w.size() == 5) {
      const std::int64_t k = in.number(w[1], 0, tasks - 1);
      DurableOutput o;
      o.steps = in.number(w[2], 0, kMaxCount);
      const std::int64_t n = in.number(w[3], 0, kMaxCount);
      const std::string& hex = w[4];
      if (n == 0 ? hex != "-" : hex.size() != static_cast<std::size_t>(n) * 16) {
        in.fail("task " + w[1] + "'s output does not have " + w[3] + " values");
      }
      for (std::int64_t i = 0; i < n; ++i) {
        o.values.push_back(
            std::bit_cast<double>(in.hex(hex.substr(static_cast<std::size_t>(i) * 16, 16))));
      }
      if (!g.outputs.emplace(k, std::move(o)).second) in.fail("task " + w[1] + " listed twice");
    } else if (w[0] == "tape" && w.size() == static_cast<std::size_t>(group_size) + 2) {
      const std::int64_t k = in.number(w[1], 0, tasks - 1);
      if (!g.outputs.contains(k)) in.fail("task " + w[1] + "'s tape listed without its output");
      std::vector<std::uint64_t> sums;
      for (std::size_t r = 2; r < w.size(); ++r) sums.push_back(in.hex(w[r]));
      g.tapes[k] = std::move(sums);
    } else if (w[0] == "summed" && w.size() == 2) {
      const std::int64_t k = in.number(w[1], 0, tasks - 1);
      if (!g.outputs.contains(k)) in.fail("task " + w[1] + " summed without its output");
      g.summed.push_back(k);
    } else if (w[0] == "sum" && w.size() == 6) {
      DurableSum s;
      s.rank = static_cast<int>(in.number(w[1], 0, 1 << 24));
      if (s.rank != static_cast<int>(g.sums.size())) in.fail("partial sums out of rank order");
      s.file = w[2];
      if (s.file.find('/') != std::string::npos) in.fail("a file name outside the directory");
      s.length = static_cast<std::uint64_t>(in.number(w[3], 0, kMaxCount));
      s.terms = static_cast<std::uint64_t>(in.number(w[4], 0, kMaxCount));
      s.checksum = in.hex(w[5]);
      g.sums.push_back(s);
    } else {
      in.fail("an unknown line ('" + w[0] + "')");
    }
  }
  if (!g.summed.empty() && g.sums.empty()) in.fail("tasks summed but no partial sums listed");
  for (const DurableSum& s : g.sums) {
    if (s.terms != g.summed.size()) in.fail("a partial sum's terms differ from the tasks summed");
  }
  return g;
}

std::string sum_bytes(const ReproducibleSum& sum) {
  std::string out(kSumMagic, sizeof kSumMagic);
  const std::uint64_t head[2] = {sum.length(), sum.terms()};
  out.append(reinterpret_cast<const char*>(head), sizeof head);
  const std::vector<std::uint64_t>& w = sum.words();
  out.append(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(std::uint64_t));
  return out;
}

ReproducibleSum parse_sum(std::string_view bytes, const DurableSum& expected,
                          const std::string& source) {
  const auto refuse = [&](const std::string& what) {
    throw Error(ErrorCode::Corrupt, "ensemble resume: the partial sum " + source + " " + what +
                                        "; the manifest cannot be used (remove the ensemble's "
                                        "files, " +
                                        files_hint(source) + ", to start again)");
  };
  if (engine::durable_checksum(bytes) != expected.checksum) {
    refuse("fails its checksum (damaged or changed)");
  }
  const std::size_t words = expected.length * ReproducibleSum::words_per_entry();
  if (bytes.size() != sizeof kSumMagic + 16 + words * 8 ||
      std::memcmp(bytes.data(), kSumMagic, sizeof kSumMagic) != 0) {
    refuse("does not have the size its group's file gives");
  }
  std::uint64_t head[2];
  std::memcpy(head, bytes.data() + sizeof kSumMagic, sizeof head);
  if (head[0] != expected.length || head[1] != expected.terms) {
    refuse("does not hold the sum its group's file lists");
  }
  std::vector<std::uint64_t> w(words);
  std::memcpy(w.data(), bytes.data() + sizeof kSumMagic + 16, words * 8);
  return ReproducibleSum::from_words(expected.length, expected.terms, std::move(w));
}

std::uint64_t cotangents_hash(const double* values, std::size_t count) {
  return engine::durable_checksum(
      std::string_view(reinterpret_cast<const char*>(values), count * sizeof(double)));
}

}  // namespace rwd::ensemble::detail
