// The driver the default test suite links fuzz targets with (libFuzzer's own main replaces it
// in the clang fuzzing build, REWIND_FUZZ=ON): runs every file given on the command line (or
// in a given directory) through LLVMFuzzerTestOneInput, then `--random N` inputs from a fixed
// seed, each a mutation of a corpus file or fresh bytes. Deterministic, so a failure repeats.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

std::vector<std::uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::vector<std::uint8_t>> corpus;
  long random_inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--random" && i + 1 < argc) {
      random_inputs = std::atol(argv[++i]);
    } else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::directory_iterator(a)) {
        if (e.is_regular_file()) corpus.push_back(read_file(e.path()));
      }
    } else if (std::filesystem::is_regular_file(a)) {
      corpus.push_back(read_file(a));
    }
  }
  for (const auto& input : corpus) LLVMFuzzerTestOneInput(input.data(), input.size());
  std::mt19937_64 rng(20261123);
  for (long k = 0; k < random_inputs; ++k) {
    std::vector<std::uint8_t> input;
    if (!corpus.empty() && rng() % 4 != 0) {
      input = corpus[rng() % corpus.size()];
      const int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits; ++e) {
        const int what = static_cast<int>(rng() % 3);
        if (what == 0 && !input.empty()) {
          input[rng() % input.size()] = static_cast<std::uint8_t>(rng());
        } else if (what == 1) {
          input.insert(input.begin() + static_cast<long>(rng() % (input.size() + 1)),
                       static_cast<std::uint8_t>(rng()));
        } else if (!input.empty()) {
          input.erase(input.begin() + static_cast<long>(rng() % input.size()));
        }
      }
    } else {
      input.resize(rng() % 96);
      for (auto& b : input) b = static_cast<std::uint8_t>(rng());
    }
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  std::printf("fuzz replay: %zu corpus inputs and %ld random inputs, no failure\n", corpus.size(),
              random_inputs);
  return 0;
}
