#include <algorithm>
#include <string>
#include <vector>

#include "rewind/engine/manifest.hpp"

namespace rwd::engine {

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
