// Fuzz target: the rewind trajectory's options. Any text on the options database (numbers out
// of range, NaN, infinities, words where numbers belong, unknown schedules, odd directories)
// must end in a PETSc error code or a configured trajectory; never a crash or a sanitizer
// report. Runs on one rank.
#include <petscts.h>

#include <cstdint>
#include <string>

#include "rewind/petsc/trajectory.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  if (PetscInitializeNoArguments()) return 1;
  if (TSTrajectoryRegisterRewind()) return 1;
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);  // errors are expected; stay quiet
  // A crash must reach the sanitizer and libFuzzer (which keeps the input), not PETSc's handler.
  PetscPopSignalHandler();
  return 0;
}

namespace {

// The input as option text: printable characters only (PETSc's parser takes C strings), and
// every option name rewind reads offered so that mutations reach their values.
std::string options_text(const std::uint8_t* data, std::size_t size) {
  static const char* const names[] = {
      "-ts_trajectory_max_cps_ram",      "-ts_trajectory_max_cps_disk",
      "-ts_trajectory_rewind_schedule",  "-ts_trajectory_rewind_write_cost",
      "-ts_trajectory_rewind_read_cost", "-ts_trajectory_rewind_async",
      "-ts_trajectory_rewind_ram_bytes", "-ts_trajectory_rewind_steps",
      "-ts_trajectory_rewind_verify",    "-ts_trajectory_solution_only",
      "-ts_trajectory_keep_files"};
  std::string text = "-ts_trajectory_type rewind";
  for (std::size_t i = 0; i < size && text.size() < 512; ++i) {
    const std::uint8_t b = data[i];
    if (b >= 0xf0) {
      text += " ";
      text += names[b % (sizeof names / sizeof names[0])];
      text += " ";
    } else if (b >= 32 && b < 127) {
      text += static_cast<char>(b);
    } else {
      text += ' ';
    }
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = options_text(data, size);
  PetscOptions options = nullptr;
  if (PetscOptionsCreate(&options)) return 0;
  TSTrajectory tj = nullptr;
  if (!PetscOptionsInsertString(options, text.c_str()) &&
      !TSTrajectoryCreate(PETSC_COMM_SELF, &tj) &&
      !PetscObjectSetOptions(reinterpret_cast<PetscObject>(tj), options)) {
    if (!TSTrajectorySetType(tj, nullptr, TSTRAJECTORYREWIND)) {
      TSTrajectorySetFromOptions(tj, nullptr);
    }
  }
  if (tj) TSTrajectoryDestroy(&tj);
  PetscOptionsDestroy(&options);
  return 0;
}
