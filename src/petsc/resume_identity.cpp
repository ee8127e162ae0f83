#include "resume_identity.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <system_error>

#include "check.hpp"

namespace rwd::petsc {

namespace {

bool is_option_name(const std::string& token) {
  return token.size() > 1 && token[0] == '-' && !(token[1] >= '0' && token[1] <= '9') &&
         token[1] != '.';
}

// The '_'-separated components of a name without its '-'.
std::vector<std::string> components(const std::string& name) {
  std::vector<std::string> out;
  std::size_t at = name.find_first_not_of('-');
  while (at != std::string::npos && at <= name.size()) {
    const std::size_t end = std::min(name.find('_', at), name.size());
    out.push_back(name.substr(at, end - at));
    at = end + 1;
    if (end == name.size()) break;
  }
  return out;
}

// "program <name> <hash of its executable>": another program (or the same one built again
// from other sources) is another problem, though its options be the same. Read once.
const std::string& program() {
  static const std::string id = [] {
    char name[PETSC_MAX_PATH_LEN] = "";
    PetscGetProgramName(name, sizeof name);
    std::string bytes;
    if (std::FILE* f = std::fopen("/proc/self/exe", "rb")) {
      char buffer[1 << 16];
      std::size_t got = 0;
      while ((got = std::fread(buffer, 1, sizeof buffer, f)) > 0) bytes.append(buffer, got);
      std::fclose(f);
    }
    char hash[32];
    std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(bytes));
    std::string base = name;  // the same program started by another path is the same
    base =
        base.substr(base.find_last_of('/') == std::string::npos ? 0 : base.find_last_of('/') + 1);
    return "program " + base + " " + (bytes.empty() ? "unread" : hash);
  }();
  return id;
}

}  // namespace

bool changes_results(const std::string& name) {
  // Output and run-time options of PETSc itself, by their first component.
  static const char* const output_first[] = {"log",        "info",    "viewer", "draw",   "options",
                                             "help",       "version", "malloc", "memory", "history",
                                             "checkstack", "dll",     "objects"};
  const std::vector<std::string> parts = components(name);
  if (parts.empty()) return true;
  for (const char* first : output_first) {
    if (parts.front() == first) return false;
  }
  if (parts.size() >= 2 && parts[0] == "on" && parts[1] == "error") return false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == "view" || parts[i] == "monitor") return false;
    if (i + 1 < parts.size() && parts[i] == "ts" && parts[i + 1] == "trajectory") return false;
    if (i + 1 < parts.size() && parts[i] == "converged" && parts[i + 1] == "reason") return false;
  }
  return true;
}

std::string canonical_value(const std::string& value) {
  const std::size_t slash = value.find('/');
  if (slash == std::string::npos || value.find(':') < slash) return value;
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(value, ec);
  if (ec) return value;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal().string() : canonical.string();
}

std::vector<std::string> identity_options(const std::string& all) {
  std::vector<std::string> tokens;
  std::size_t at = 0;
  while (at < all.size()) {
    const std::size_t end = std::min(all.find(' ', at), all.size());
    if (end > at) tokens.push_back(all.substr(at, end - at));
    at = end + 1;
  }
  std::vector<std::string> options;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (!is_option_name(tokens[i])) continue;
    const std::string name = tokens[i];
    std::string option = name;
    while (i + 1 < tokens.size() && !is_option_name(tokens[i + 1])) {
      option += ' ';  // not " " + ...: GCC 12's -Wrestrict misfires on it at -O2
      option += canonical_value(tokens[++i]);
    }
    if (changes_results(name)) options.push_back(option);
  }
  std::sort(options.begin(), options.end());
  return options;
}

std::string resume_identity(TS ts) {
  char* all = nullptr;
  REWIND_PETSC(PetscOptionsGetAll(nullptr, &all));
  const std::string text = all ? all : "";
  PetscFree(all);
  TSType type = nullptr;
  REWIND_PETSC(TSGetType(ts, &type));
  std::string out = program() + "; PETSc TS " + (type ? type : "?") + ";";
  for (const std::string& option : identity_options(text)) out += " " + option;
  return out;
}

std::string ensemble_identity() {
  char* all = nullptr;
  REWIND_PETSC(PetscOptionsGetAll(nullptr, &all));
  const std::string text = all ? all : "";
  PetscFree(all);
  std::string out = program() + "; ensemble;";
  for (const std::string& option : identity_options(text)) {
    if (option.rfind("-rewind_ensemble_", 0) != 0) out += " " + option;
  }
  return out;
}

}  // namespace rwd::petsc
