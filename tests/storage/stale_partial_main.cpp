// A run killed while its HDF5 store is live leaves its `.h5.partial` file behind (SIGKILL runs no
// code at all; SIGTERM and SIGINT, with their default action, run no destructor either). The
// next store opened in that directory removes it. Driven by stale_partial.cmake:
//
//   stale-partial die KILL|TERM|INT <dir>   store a checkpoint, then raise the signal
//   stale-partial clean <dir>               expect exactly that file; open a store; expect it gone
//   stale-partial exit <dir>                store a checkpoint, then std::exit(3) (no destructor)
#include <mpi.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "hdf5_store.hpp"
#include "rewind/error.hpp"

namespace {

std::vector<std::string> partials(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 11 && name.ends_with(".h5.partial")) out.push_back(name);
  }
  return out;
}

int run(const std::vector<std::string>& args) {
  using namespace rwd::storage;
  StoreConfig config;
  config.comm = MPI_COMM_WORLD;
  config.label = "killed";
  if (args.size() == 3 && args[0] == "die") {
    config.directory = args[2];
    const int sig = args[1] == "KILL" ? SIGKILL : args[1] == "TERM" ? SIGTERM : SIGINT;
    Hdf5Store store(config);
    std::vector<double> data(100000, 1.5);
    const std::vector<FieldView> fields = {{"u", data, 0, 100000}};
    store.put(Key{1, Kind::Restart}, {fields, {}});
    store.flush();
    std::printf("die: %s holds a checkpoint; raising SIG%s\n", store.path().c_str(),
                args[1].c_str());
    std::fflush(stdout);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    std::printf("die: still alive after SIG%s\n", args[1].c_str());
    return 3;
  }
  if (args.size() == 2 && args[0] == "exit") {
    // A program that stops on an error without destroying its store (as PETSc's error handling
    // returns from main): std::exit runs no destructor of the stack, but the file goes.
    config.directory = args[1];
    Hdf5Store store(config);
    std::vector<double> data(1000, 2.5);
    const std::vector<FieldView> fields = {{"u", data, 0, 1000}};
    store.put(Key{1, Kind::Restart}, {fields, {}});
    std::printf("exit: %s holds a checkpoint; exiting with status 3\n", store.path().c_str());
    std::fflush(stdout);
    std::exit(3);
  }
  if (args.size() == 2 && args[0] == "clean") {
    config.directory = args[1];
    const auto left = partials(args[1]);
    if (left.size() != 1) {
      std::printf("clean: expected the killed run's partial file, found %zu\n", left.size());
      return 1;
    }
    Hdf5Store store(config);
    const auto now = partials(args[1]);
    const std::string mine = std::filesystem::path(store.path()).filename().string();
    if (now.size() != 1 || now[0] != mine) {
      std::printf("clean: %s was not removed (%zu partial files)\n", left[0].c_str(), now.size());
      return 1;
    }
    store.close();
    std::printf("clean: %s removed\n", left[0].c_str());
    return partials(args[1]).empty() ? 0 : 1;
  }
  std::fprintf(stderr, "usage: stale-partial die KILL|TERM|INT <dir> | clean <dir>\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    status = run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const rwd::Error& e) {
    std::printf("error: %s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
