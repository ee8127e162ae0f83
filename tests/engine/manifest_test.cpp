// The resume manifest: written and read back exactly, every kind of damage refused with the
// line, and the differences between two problems named.

#include "rewind/engine/manifest.hpp"

#include <gtest/gtest.h>

#include <string>

#include "rewind/error.hpp"

namespace rwd::engine {
namespace {

Manifest sample() {
  Manifest m;
  m.identity = "heat -n 64 (dt 0.01)";
  m.label = "heat-64";
  m.ranks = 2;
  m.steps = 30;
  m.interval = 5;
  m.generation = 2;
  m.state = {{"x", 10, {0, 4}, {4, 6}}, {"F", 10, {0, 4}, {4, 6}}};
  m.adjoint = {{"lambda", 10, {0, 4}, {4, 6}}, {"dJdF", 2, {0, 1}, {1, 1}}};
  for (std::int64_t step : {0, 5, 10}) {
    ManifestEntry e;
    e.step = step;
    e.file = "rewind-run.resume-" + std::to_string(step / 5 + 1) + ".h5";
    for (std::int64_t r = 0; r < 2; ++r) {
      const std::int64_t n = r == 0 ? 4 : 6;
      const auto u = static_cast<std::uint64_t>(step + r);
      e.blocks.push_back({{"x", 4096 + 800 * step + 8 * 4 * r, n, 0x1234u + 7u * u},
                          {"F", 8192 + 800 * step + 8 * 4 * r, n, ~0ull - u}});
    }
    m.states.push_back(e);
  }
  for (std::int64_t step : {15, 20, 25}) {  // reached: checksums only
    ManifestEntry e;
    e.step = step;
    e.blocks = {{{"x", 0, 4, 11u * static_cast<std::uint64_t>(step)}, {"F", 0, 4, 1}},
                {{"x", 0, 6, 13u * static_cast<std::uint64_t>(step)}, {"F", 0, 6, 2}}};
    m.reached.push_back(e);
  }
  ManifestEntry a;
  a.step = 15;
  a.file = "rewind-run.resume-2.h5";
  a.blocks = {{{"lambda", 100, 4, 1}, {"dJdF", 200, 1, 2}},
              {{"lambda", 132, 6, 3}, {"dJdF", 208, 1, 4}}};
  m.reverse = a;
  return m;
}

std::string error_of(const std::string& text) {
  try {
    parse_manifest(text, "m");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Corrupt) << e.what();
    return e.what();
  }
  return {};
}

// The text with `from` replaced by `to` once. The reader checks each line as it comes and the
// checksum only at the end line, so a damaged line is reported as what it is.
std::string edited(const std::string& text, const std::string& from, const std::string& to) {
  std::string body = text.substr(0, text.rfind("end "));
  const std::size_t at = body.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) body.replace(at, from.size(), to);
  return body + "end 0000000000000000\n";
}

TEST(Manifest, IsReadBackExactly) {
  const Manifest m = sample();
  const std::string text = to_text(m);
  const Manifest back = parse_manifest(text, "m");
  EXPECT_EQ(back.identity, m.identity);
  EXPECT_EQ(back.label, "heat-64");
  ASSERT_EQ(back.reached.size(), 3u);
  EXPECT_EQ(back.reached[1].step, 20);
  EXPECT_TRUE(back.reached[1].file.empty());
  EXPECT_EQ(back.reached[2].blocks[1][0].checksum, 13u * 25u);
  EXPECT_EQ(back.ranks, 2);
  EXPECT_EQ(back.steps, 30);
  EXPECT_EQ(back.interval, 5);
  EXPECT_EQ(back.generation, 2);
  EXPECT_EQ(back.state, m.state);
  EXPECT_EQ(back.adjoint, m.adjoint);
  ASSERT_EQ(back.states.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.states[i].step, m.states[i].step);
    EXPECT_EQ(back.states[i].file, m.states[i].file);
    for (std::size_t r = 0; r < 2; ++r) {
      for (std::size_t f = 0; f < 2; ++f) {
        const auto& a = back.states[i].blocks[r][f];
        const auto& b = m.states[i].blocks[r][f];
        EXPECT_EQ(a.field, b.field);
        EXPECT_EQ(a.at, b.at);
        EXPECT_EQ(a.count, b.count);
        EXPECT_EQ(a.checksum, b.checksum);
      }
    }
  }
  ASSERT_TRUE(back.reverse.has_value());
  EXPECT_EQ(back.reverse->step, 15);
  EXPECT_EQ(back.reverse->blocks[1][1].checksum, 4u);
  EXPECT_EQ(to_text(back), text);
  EXPECT_TRUE(differences(back, m).empty());
}

// Compressed blocks (a disk store with a codec): their stored bytes are a 7th value on their
// lines, the manifest says version 3, and both read back; a 7th value in a version-2 manifest
// is damage.
TEST(Manifest, CompressedBlocksKeepTheirStoredBytesInVersion3) {
  Manifest m = sample();
  m.states[1].blocks[1][0].stored = 123;
  m.reverse->blocks[0][1].stored = 7;
  const std::string text = to_text(m);
  ASSERT_EQ(text.rfind("rewind resume manifest 3\n", 0), 0u) << text;
  EXPECT_NE(text.find(" 123\n"), std::string::npos) << text;
  const Manifest back = parse_manifest(text, "m");
  EXPECT_EQ(back.states[1].blocks[1][0].stored, 123);
  EXPECT_EQ(back.states[1].blocks[0][0].stored, 0);
  EXPECT_EQ(back.reverse->blocks[0][1].stored, 7);
  EXPECT_EQ(to_text(back), text);
  EXPECT_EQ(to_text(sample()).rfind("rewind resume manifest 2\n", 0), 0u) << "none compressed";
  // A 7th value under version 2 (what an edited version line gives) is refused.
  const std::string v2 = error_of(edited(text, "manifest 3", "manifest 2"));
  EXPECT_NE(v2.find("'block' takes 5 values, not 6"), std::string::npos) << v2;
}

TEST(Manifest, AnyChangedByteFailsItsChecksumAndACutFileIsSaidToBeCut) {
  const std::string text = to_text(sample());
  for (std::size_t i = 0; i + 25 < text.size(); i += 7) {  // past the first line
    if (i < 25) continue;
    std::string bad = text;
    bad[i] = bad[i] == '1' ? '2' : '1';
    EXPECT_FALSE(error_of(bad).empty()) << "byte " << i;
  }
  const std::string cut = text.substr(0, text.size() / 2);
  const std::string what = error_of(cut.substr(0, cut.rfind('\n') + 1));
  EXPECT_NE(what.find("no 'end' line (the file was cut short)"), std::string::npos) << what;
  EXPECT_NE(error_of(text.substr(0, text.size() - 1)).find("no newline"), std::string::npos);
  EXPECT_NE(error_of("PK\x03\x04 zip\n").find("not a rewind resume manifest"), std::string::npos);
  EXPECT_NE(error_of("").find("not a rewind resume manifest"), std::string::npos);
}

TEST(Manifest, AnOlderVersionIsRefusedByItsVersion) {
  // Version 1's block checksums are rwd64: read as XXH3-64 every block would fail its checksum
  // as if the file were damaged. The refusal says what it is instead, on the first line.
  const std::string text = to_text(sample());
  ASSERT_EQ(text.rfind("rewind resume manifest 2\n", 0), 0u);
  const std::string v1 = edited(text, "manifest 2", "manifest 1");
  const std::string what = error_of(v1);
  EXPECT_NE(what.find("line 1: written by an older rewind (manifest version 1, block checksums "
                      "rwd64)"),
            std::string::npos)
      << what;
  const std::string v9 = error_of(edited(text, "manifest 2", "manifest 9"));
  EXPECT_NE(v9.find("manifest version '9'; this rewind reads versions 2 and 3"), std::string::npos)
      << v9;
}

TEST(Manifest, StructuralDamageIsNamedWithItsLine) {
  const std::string text = to_text(sample());
  const auto expect = [&](const std::string& from, const std::string& to, const std::string& why) {
    const std::string what = error_of(edited(text, from, to));
    EXPECT_NE(what.find(why), std::string::npos) << from << " -> " << to << ": " << what;
    EXPECT_NE(what.find("resume manifest 'm', line "), std::string::npos) << what;
  };
  expect("ranks 2\n", "ranks 0\n", "ranks: 0 is out of range");
  expect("ranks 2\n", "ranks two\n", "'two' is not an integer");
  expect("interval 5\n", "interval 31\n", "interval: 31 is out of range");
  expect("\nstate 5 ", "\nstate 7 ", "step 7 is not a multiple of the interval");
  expect("\nstate 10 ", "\nstate 5 ", "states are listed by increasing step");
  expect("steps 30\n", "steps 30\nbogus 1\n", "expected 'interval'");
  expect("block 1 1 ", "block 1 0 ", "blocks of a rank are listed once each");
  expect("layout state 1 0 4 6\n", "", "field 'x' has no layout for rank 1");
  expect("layout state 1 0 4 6", "layout state 1 0 4 7", "out of range");
  expect("generation 2\n", "generation 2\nfield state 0 78 10\n",
         "fields are numbered 0, 1, ... in order");
  // The last state's blocks of rank 1 removed: found missing at the next entry.
  const std::string tail = "adjoint 15 ";
  std::string cut = text.substr(0, text.find(tail));
  cut = cut.substr(0, cut.rfind("block 1 0"));
  const std::string what = error_of(cut + text.substr(text.find(tail)));
  EXPECT_NE(what.find("lacks blocks of rank 1"), std::string::npos) << what;
  // File names stay in the manifest's directory.
  expect("\nstate 0 ", "\nstate 0 2e2e2f", "a file name is a plain name");
  expect("\nreached 20 -", "\nreached 20 61", "a state reached names no file ('-')");
  expect("\nreached 25 ", "\nreached 20 ", "states are listed by increasing step");
  expect("\nreached 15 -\n", "\nstate 12 -\n", "not a multiple of the interval");
}

TEST(Manifest, EntriesOutOfTheOrderARunWritesAreRefused) {
  const auto expect = [](const Manifest& m, const std::string& why) {
    const std::string what = error_of(to_text(m));  // a valid checksum: only the order is wrong
    EXPECT_NE(what.find(why), std::string::npos) << what;
  };
  Manifest gap = sample();
  gap.states.erase(gap.states.begin() + 1);  // x_0, x_10: x_5 missing
  expect(gap, "the states are not x_0 and every interval after it");
  Manifest adjoint_off = sample();
  adjoint_off.reverse->step = 20;
  expect(adjoint_off, "the adjoint state is at step 20, not where the states stop (15)");
  Manifest reached_alone = sample();
  reached_alone.reverse.reset();
  expect(reached_alone, "states reached are listed without an adjoint state");
  Manifest reached_gap = sample();
  reached_gap.reached.erase(reached_gap.reached.begin() + 1);
  expect(reached_gap, "the states reached do not follow the states every interval");
  Manifest long_name = sample();
  long_name.state[0].name = std::string(5000, 'x');
  expect(long_name, "a field's name is 1 to 4096 bytes");
}

// A host whose program reads x_n before its reverse sweep (PETSc) keeps the final state too.
TEST(Manifest, AFinalStateIsKeptAfterTheStatesAndAtMostAtStepN) {
  Manifest m = sample();
  ManifestEntry f = m.states.front();
  f.step = m.steps;
  f.file = "rewind-run.resume-1.h5";
  m.final_state = f;
  const std::string text = to_text(m);
  const Manifest back = parse_manifest(text, "m");
  ASSERT_TRUE(back.final_state.has_value());
  EXPECT_EQ(back.final_state->step, 30);
  EXPECT_EQ(back.final_state->blocks[1][0].checksum, f.blocks[1][0].checksum);
  EXPECT_EQ(to_text(back), text);
  // Beyond the step count; not after the states (a run that learns its step count at the end
  // ends after its last state).
  const std::string what = error_of(edited(text, "\nfinal 30 ", "\nfinal 31 "));
  EXPECT_NE(what.find("final: 31 is out of range"), std::string::npos) << what;
  Manifest before = m;
  before.final_state->step = 25;
  const std::string early = error_of(to_text(before));
  EXPECT_NE(early.find("the final state (step 25) is not after the states"), std::string::npos)
      << early;
  Manifest ended = m;  // a run that ended at step 27 of at most 30
  ended.final_state->step = 27;
  EXPECT_EQ(parse_manifest(to_text(ended), "m").final_state->step, 27);
  // Out of the order a run writes: a state after the final state.
  Manifest late = m;
  late.reached.clear();
  late.reverse.reset();
  const std::string t = to_text(late);
  const std::size_t fin = t.find("\nfinal "), end = t.rfind("end ");
  const std::string moved = t.substr(0, fin + 1) + t.substr(fin + 1, end - fin - 1) +
                            t.substr(t.find("\nstate 10 ") + 1, fin - t.find("\nstate 10 ")) +
                            "end 0000000000000000\n";
  const std::string order = error_of(moved);
  EXPECT_NE(order.find("a state after the final state"), std::string::npos) << order;
}

// Long identities made of options (PETSc's) are compared by their options: the ones that
// differ are named, not two long strings to compare by eye.
TEST(Manifest, IdentitiesOfOptionsNameTheOptionsThatDiffer) {
  Manifest a = sample(), b = sample();
  const std::string common =
      "program ex5adj 00ab12cd34ef5678; PETSc TS cn; -da_grid_x 128 "
      "-da_grid_y 128 -ts_max_steps 300 -ts_trajectory_max_cps_disk 30";
  a.identity = common + " -ts_rtol 1e-5 -ts_type cn";
  b.identity = common + " -ts_rtol 1e-6 -ts_type cn";
  std::string all;
  for (const auto& s : differences(a, b)) all += s + "\n";
  EXPECT_NE(all.find("differs: only the killed run's has '-ts_rtol 1e-5'; only this run's has "
                     "'-ts_rtol 1e-6'"),
            std::string::npos)
      << all;
  b.identity = common + " -ts_type cn";  // an option left out
  all.clear();
  for (const auto& s : differences(a, b)) all += s + "\n";
  EXPECT_NE(all.find("only the killed run's has '-ts_rtol 1e-5'; only this run's has nothing"),
            std::string::npos)
      << all;
}

TEST(Manifest, DifferencesNameWhatChanged) {
  const Manifest a = sample();
  Manifest b = a;
  b.identity = "heat -n 128";
  b.label = "heat_64";
  b.ranks = 3;
  b.steps = 40;
  b.state[1].name = "G";
  b.adjoint[0].global_size = 12;
  b.state[0].counts = {5, 5};
  const std::vector<std::string> d = differences(a, b);
  std::string all;
  for (const auto& s : d) all += s + "\n";
  EXPECT_NE(all.find("ResumeConfig::identity in C++) was 'heat -n 64 (dt 0.01)', is "
                     "'heat -n 128'"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("the rank count was 2, is 3"), std::string::npos) << all;
  EXPECT_NE(all.find("the label (StoreConfig::label) was 'heat-64', is 'heat_64'"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("the step count was 30, is 40"), std::string::npos) << all;
  EXPECT_NE(all.find("state field 1 was 'F', is 'G'"), std::string::npos) << all;
  EXPECT_NE(all.find("adjoint state field 'lambda' had 10 values, has 12"), std::string::npos)
      << all;
  EXPECT_NE(all.find("state field 'x' is split over the ranks differently"), std::string::npos)
      << all;
  // Generation and entries are not the problem's identity.
  Manifest c = a;
  c.generation = 9;
  c.states.clear();
  EXPECT_TRUE(differences(a, c).empty());
}

}  // namespace
}  // namespace rwd::engine
