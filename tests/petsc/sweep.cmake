# The sweep: every TS tutorial of the PETSc built against that calls TSAdjointSolve (the same 21
# in 3.18, 3.22 and 3.25), each through one comparison grid: rewind's store-all, a RAM budget,
# and RAM + disk, on fixed and on adaptive steps, at 1 rank and, where the tutorial runs in
# parallel, 2; each bitwise against PETSc's store-all (memory, or basic where memory fails).
# Tests petsc.sweep.<tutorial>.np<ranks>.<fixed|adapt>.<storeall|ram|ramdisk> (label petsc);
# the tests above go deeper into some of the same tutorials.
#
# Included from tests/petsc/CMakeLists.txt after the tutorial targets, rewind_petsc_case and
# the budgets are defined.

# Lines of a tutorial's stdout that carry results, compared as well as lambda[0] and the final
# state: bare numbers (a Vec viewed in ASCII, a parameter gradient), Tao's monitor, and the cost
# lines of the power-grid and autodiff tutorials. The tutorials defined above keep their own.
set(_sweep_lines "^ *[-+]?[0-9.]+(e[-+]?[0-9]+)? *$| TAO, .*| cost function=.*| gradient=.*|Cost function f=.*")

# The tutorials the tests above do not build yet.
set(_adr advection-diffusion-reaction)
rewind_petsc_tutorial(petsc_ex5adj_mf SOURCES ${_adr}/ex5adj_mf.c ${_adr}/reaction_diffusion.c)
rewind_petsc_tutorial(petsc_ex5opt_ic SOURCES ${_adr}/ex5opt_ic.c ${_adr}/reaction_diffusion.c
                      STDOUT_LINES "${_sweep_lines}")
rewind_petsc_tutorial(petsc_ex20opt_p SOURCES ex20opt_p.c STDOUT_LINES "${_sweep_lines}")
rewind_petsc_tutorial(petsc_ex23fwdadj SOURCES ex23fwdadj.c STDOUT_LINES "${_sweep_lines}")
rewind_petsc_tutorial(petsc_oc_ex1 SOURCES optimal_control/ex1.c STDOUT_LINES "${_sweep_lines}")
rewind_petsc_tutorial(petsc_ex9opt SOURCES power_grid/ex9opt.c STDOUT_LINES "${_sweep_lines}")
# The autodiff tutorials need ADOL-C (Debian: libadolc-dev, with ColPack); PETSc itself does not.
find_path(REWIND_ADOLC_INCLUDE_DIR adolc/adolc.h)
find_library(REWIND_ADOLC_LIBRARY adolc)
find_library(REWIND_COLPACK_LIBRARY ColPack)
if(REWIND_ADOLC_INCLUDE_DIR AND REWIND_ADOLC_LIBRARY AND REWIND_COLPACK_LIBRARY)
  foreach(name adr_ex5adj adr_ex5adj_mf ex16adj ex16adj_tl ex16opt_ic)
    set(lines)
    if(name MATCHES "^ex16")
      set(lines STDOUT_LINES "${_sweep_lines}")
    endif()
    rewind_petsc_tutorial(petsc_${name} SOURCES autodiff/${name}.cxx ${lines}
                          LIBS ${REWIND_ADOLC_LIBRARY} ${REWIND_COLPACK_LIBRARY})
    target_include_directories(petsc_${name} PRIVATE ${REWIND_ADOLC_INCLUDE_DIR})
  endforeach()
else()
  message(WARNING "ADOL-C was not found (adolc/adolc.h, libadolc, libColPack): PETSc's autodiff "
                  "tutorials are left out of the sweep; install libadolc-dev "
                  "(scripts/install-deps.sh does)")
endif()

# One row a tutorial: rewind_petsc_sweep(<name> TUTORIAL <target> RANKS <1 [2]> ARGS <...>
#   [ADAPT <args for the adaptive runs>] [NO_ADAPT] [RAM <slots>] [BASELINE <args>]
#   [EXPECT_<stepping>_<budget> <regex>])
# ARGS make the run short and are shared by every cell; the fixed-step cells add
# -ts_adapt_type none, the adaptive ones ADAPT (default: -ts_adapt_type basic). RAM is the RAM
# budget of the ram cell (default 3; the RAM + disk cell has 2 and 3 disk slots). EXPECT_
# marks a cell that must fail with that message (a clear refusal) rather than compare.
function(rewind_petsc_sweep name)
  cmake_parse_arguments(S "NO_ADAPT" "TUTORIAL;RAM"
                        "RANKS;ARGS;ADAPT;BASELINE;EXPECT_fixed_storeall;EXPECT_fixed_ram;EXPECT_fixed_ramdisk;EXPECT_adapt_storeall;EXPECT_adapt_ram;EXPECT_adapt_ramdisk"
                        ${ARGN})
  if(NOT TARGET ${S_TUTORIAL})
    return()
  endif()
  if(NOT S_RAM)
    set(S_RAM 3)
  endif()
  if(NOT S_ADAPT)
    set(S_ADAPT -ts_adapt_type basic)
  endif()
  set(baseline)
  if(S_BASELINE)
    set(baseline BASELINE ${S_BASELINE})
  endif()
  set(steppings fixed)
  if(NOT S_NO_ADAPT)
    list(APPEND steppings adapt)
  endif()
  set(cells_storeall ${_rewind})
  set(cells_ram ${_rewind} -ts_trajectory_max_cps_ram ${S_RAM} -ts_trajectory_solution_only 0)
  set(cells_ramdisk ${_rewind} -ts_trajectory_max_cps_ram 2 -ts_trajectory_max_cps_disk 3
                    -ts_trajectory_dirname rewind-checkpoints ${REWIND_GIVEN_COSTS}
                    -ts_trajectory_solution_only 1)
  foreach(np IN LISTS S_RANKS)
    foreach(stepping IN LISTS steppings)
      if(stepping STREQUAL "fixed")
        set(step_args -ts_adapt_type none)
      else()
        set(step_args ${S_ADAPT})
      endif()
      set(key sweep.${name}.np${np}.${stepping})
      foreach(budget storeall ram ramdisk)
        set(expect)
        if(S_EXPECT_${stepping}_${budget})
          set(expect EXPECT_FAILURE "${S_EXPECT_${stepping}_${budget}}.*the candidate run failed")
        endif()
        rewind_petsc_tutorial_test(NAME petsc.${key}.${budget} TUTORIAL ${S_TUTORIAL} RANKS ${np}
                                   ARGS ${S_ARGS} ${step_args} ${baseline}
                                   BASELINE_FIXTURE ${key}
                                   CANDIDATE ${cells_${budget}} ${expect})
      endforeach()
    endforeach()
  endforeach()
endfunction()

if(NOT TARGET rewind_petsc)
  return()
endif()
set(_ex5grid -da_grid_x 20 -da_grid_y 20)
set(_basic -ts_trajectory_type basic -ts_trajectory_solution_only 0
           -ts_trajectory_dirname basic-trajectory)
# advection-diffusion-reaction: CN on a DMDA (parallel); the adaptive runs start from a step the
# adapter cuts.
rewind_petsc_sweep(ex5adj TUTORIAL petsc_ex5adj RANKS 1 2 ARGS ${_ex5grid} -ts_max_steps 20
                   ADAPT -ts_adapt_type basic ${REWIND_TS_DT} 20)
rewind_petsc_sweep(ex5adj_mf TUTORIAL petsc_ex5adj_mf RANKS 1 2
                   ARGS ${_ex5grid} -ts_max_steps 20 -mf
                   ADAPT -ts_adapt_type basic ${REWIND_TS_DT} 20)
rewind_petsc_sweep(ex5opt_ic TUTORIAL petsc_ex5opt_ic RANKS 1 2
                   ARGS -ts_max_steps 10 -ts_type rk -ts_rk_type 3bs -tao_monitor -tao_max_it 3)
# autodiff (ADOL-C): the same reaction-diffusion with ADOL-C Jacobians; van der Pol.
# ADOL-C's Jacobian of adr_ex5adj depends on the run's history (entries below 1e-16 are left
# out), so a recomputed state differs from the forward run's in its last bits (below 1e-16 to
# 3e-16 relative, measured): by default the replay check stops the run and says it is round-off
# and which option accepts it; given that option, the gradient is within it of store-all's
# (with `mixed`; the fixed-step RAM cell plans `endpoints`, for CN, whose 4 recomputed steps
# there start from the first sweep's own states and reach its bits: it compares bitwise).
set(_roundoff "the recomputed state x_[0-9]+ differs from the one the first sweep reached \\(field 'X', rank 0\\) by [a-z0-9.e+ -]+ relative to its norm on this rank.*: round-off.*give -ts_trajectory_rewind_verify_tolerance")
rewind_petsc_sweep(adr_ex5adj TUTORIAL petsc_adr_ex5adj RANKS 1 2
                   ARGS -da_grid_x 12 -da_grid_y 12 -ts_max_steps 10
                   ADAPT -ts_adapt_type basic ${REWIND_TS_DT} 20
                   EXPECT_fixed_ramdisk ${_roundoff}
                   EXPECT_adapt_ram ${_roundoff} EXPECT_adapt_ramdisk ${_roundoff})
if(TARGET petsc_adr_ex5adj)
  foreach(np 1 2)
    rewind_petsc_tutorial_test(NAME petsc.sweep.adr_ex5adj.np${np}.fixed.ram.tolerance
                               TUTORIAL petsc_adr_ex5adj RANKS ${np}
                               ARGS -da_grid_x 12 -da_grid_y 12 -ts_max_steps 10 -ts_adapt_type none
                               BASELINE_FIXTURE sweep.adr_ex5adj.np${np}.fixed
                               CANDIDATE ${_rewind} -ts_trajectory_max_cps_ram 3
                                         -ts_trajectory_solution_only 0
                                         -ts_trajectory_rewind_schedule mixed
                                         -ts_trajectory_rewind_verify_tolerance 1e-12
                               RTOL 1e-12
                               VIEW_REGEX "replay check: [1-9][0-9]* recomputed fields differed from the forward run within -ts_trajectory_rewind_verify_tolerance \\(largest [0-9.]+e[-+][0-9]+ relative")
  endforeach()
endif()
rewind_petsc_sweep(adr_ex5adj_mf TUTORIAL petsc_adr_ex5adj_mf RANKS 1 2
                   ARGS -da_grid_x 12 -da_grid_y 12 -ts_max_steps 10
                   ADAPT -ts_adapt_type basic ${REWIND_TS_DT} 20)
foreach(name ex16adj ex16adj_tl)
  rewind_petsc_sweep(${name} TUTORIAL petsc_${name} RANKS 1 ARGS -ts_max_steps 30)
endforeach()
rewind_petsc_sweep(ex16opt_ic TUTORIAL petsc_ex16opt_ic RANKS 1
                   ARGS -tao_max_it 2 -tao_monitor -ts_rhs_jacobian_test_mult_transpose FALSE
                        -ts_rhs_jacobian_test_mult FALSE)
# van der Pol: adjoint, initial-condition and parameter optimisation (Tao), time-dependent
# parameters (one TSAdjointSolve a step), forward and adjoint sensitivities together.
rewind_petsc_sweep(ex20adj TUTORIAL petsc_ex20adj RANKS 1
                   ARGS -ts_type cn ${REWIND_TS_DT} 0.001 -mu 100000 -ts_max_steps 40)
rewind_petsc_sweep(ex20opt_ic TUTORIAL petsc_ex20opt_ic RANKS 1
                   ARGS -ts_type cn -mu 1000 ${REWIND_TS_DT} 0.03125 -tao_monitor -tao_max_it 3)
rewind_petsc_sweep(ex20opt_p TUTORIAL petsc_ex20opt_p RANKS 1
                   ARGS -implicitform 0 -ts_type rk -mu 10 ${REWIND_TS_DT} 0.1 -tao_monitor
                        -tao_max_it 3)
# ex20td "should be run with non adaptive time stepping solvers only" (its own words; it crashes).
rewind_petsc_sweep(ex20td TUTORIAL petsc_ex20td RANKS 1 ARGS -sa_method track NO_ADAPT)
rewind_petsc_sweep(ex23fwdadj TUTORIAL petsc_ex23fwdadj RANKS 1 ARGS -ts_type cn)
# Optimal control of an aircraft (Tao, RK).
# Its controls are indexed by the step number (fixed steps only: adaptive ones overrun them). RK
# 3bs is first-same-as-last: a restored step that restarts evaluates the stage it reuses at its own
# step number, the forward run at the previous one (PETSc's memory trajectory gives another
# gradient here). rewind takes its first restored step both ways, sees them differ, and rebuilds
# every restored step as the forward run evaluated it: store-all's bits, and the view says why.
rewind_petsc_sweep(oc_ex1 TUTORIAL petsc_oc_ex1 RANKS 1 NO_ADAPT
                   ARGS -ts_type rk -ts_rk_type 3bs -tao_monitor -tao_max_it 3)
rewind_petsc_tutorial_test(
  NAME petsc.rewind.oc_ex1.np1.rk3bs.restart_differs TUTORIAL petsc_oc_ex1 RANKS 1
  ARGS -ts_type rk -ts_rk_type 3bs -tao_monitor -tao_max_it 3 -ts_adapt_type none
  CANDIDATE ${_rewind} -ts_trajectory_max_cps_ram 2
  VIEW_REGEX "first-same-as-last method: its last stage is the solution bit for bit.*the first restored step, restarted, differed from the step rebuilt as the forward run evaluated it")
# Events (a hybrid system; a fault switched on and off), RAM 5: two events make three segments.
rewind_petsc_sweep(ex1adj TUTORIAL petsc_ex1adj RANKS 1 ARGS -tend 0.125 RAM 5 BASELINE ${_basic})
rewind_petsc_sweep(ex3sa TUTORIAL petsc_ex3sa RANKS 1 ARGS -sa_method adj -ts_type cn -pc_type lu
                   RAM 5 BASELINE ${_basic})
rewind_petsc_sweep(ex3opt TUTORIAL petsc_ex3opt RANKS 1 ARGS -ts_type cn -pc_type lu -tao_monitor
                   -tao_max_it 3 RAM 5 BASELINE ${_basic})
# Power grid: a generator's cost integral (ex9adj, ex9opt under Tao; PETSc's memory type fails
# on ex9opt), and the 9-bus study whose solves set the time back and change the model between
# them (ex9busadj, ex9busopt).
rewind_petsc_sweep(ex9adj TUTORIAL petsc_ex9adj RANKS 1 ARGS -ts_max_steps 300
                   ADAPT -ts_adapt_type basic -ts_rtol 1e-6 -ts_atol 1e-6)
rewind_petsc_sweep(ex9opt TUTORIAL petsc_ex9opt RANKS 1 ARGS -tao_monitor -tao_max_it 2
                   BASELINE ${_basic})
# Their budgeted cells cannot hold each solve's steps whole: refused at the continuing TSSolve
# (tests/petsc/CMakeLists.txt runs them bitwise under budgets that can).
set(_solves "this TSSolve continues the run from step [0-9]+, and the program may have changed its model")
rewind_petsc_sweep(ex9busadj TUTORIAL petsc_ex9busadj RANKS 1 ARGS -tmax 1.5 BASELINE ${_basic}
                   EXPECT_fixed_ram ${_solves} EXPECT_fixed_ramdisk ${_solves}
                   EXPECT_adapt_ram ${_solves} EXPECT_adapt_ramdisk ${_solves})
rewind_petsc_sweep(ex9busopt TUTORIAL petsc_ex9busopt RANKS 1 ARGS -tao_monitor -tao_gttol .2
                   BASELINE ${_basic}
                   EXPECT_fixed_ram ${_solves} EXPECT_fixed_ramdisk ${_solves}
                   EXPECT_adapt_ram ${_solves} EXPECT_adapt_ramdisk ${_solves})
