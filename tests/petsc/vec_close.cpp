// vec_close A B RTOL: whether two PETSc binary Vec files (a 4-byte class id, a 4-byte length,
// then big-endian 8-byte reals) agree within RTOL, normwise: ||A - B|| <= RTOL ||A||. Prints the
// relative difference; exit 0 when within, 1 when not, 2 when the files are not such Vecs of
// one length. compare.cmake's RTOL runs it, for candidates whose gradient may differ from the
// baseline's in the last bits by the user's choice (-ts_trajectory_rewind_verify_tolerance).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

namespace {

bool read_vec(const char* path, std::vector<double>& out) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<unsigned char> b((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
  if (b.size() < 8 || (b.size() - 8) % 8 != 0) return false;
  out.clear();
  for (std::size_t at = 8; at < b.size(); at += 8) {
    std::uint64_t bits = 0;
    for (std::size_t k = 0; k < 8; ++k) bits = (bits << 8) | b[at + k];
    double v;
    static_assert(sizeof v == sizeof bits);
    __builtin_memcpy(&v, &bits, sizeof v);
    out.push_back(v);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: vec_close A B RTOL\n");
    return 2;
  }
  std::vector<double> a, b;
  if (!read_vec(argv[1], a) || !read_vec(argv[2], b) || a.size() != b.size()) {
    std::fprintf(stderr, "vec_close: %s and %s are not PETSc binary Vecs of one length\n", argv[1],
                 argv[2]);
    return 2;
  }
  const double rtol = std::strtod(argv[3], nullptr);
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += a[i] * a[i];
  }
  const double rel = norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  const bool within = std::isfinite(rel) && rel <= rtol;
  std::printf("relative difference %.3e (%s %.1e)\n", rel, within ? "within" : "NOT within", rtol);
  return within ? 0 : 1;
}
