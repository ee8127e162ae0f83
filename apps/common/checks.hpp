#pragma once
// The checks rewind-heat and rewind-burgers offer: the gradient bit for bit against a solve with
// PETSc's store-all trajectory (-compare_storeall), and against finite differences of J along a
// smooth direction (-taylor).
#include <petscvec.h>

#include <string>

#include "adjoint_app.hpp"
#include "driver.hpp"
#include "report.hpp"

namespace rwd::apps {

/// Bitwise comparison of two distributed vectors, agreed on by every rank. Collective on their
/// communicator.
FieldComparison compare_bits(const std::string& name, Vec a, Vec b);

/// The Taylor test of the gradient `base` gave at u0 (and the problem's parameter): J along the
/// problem's directions by forward solves that replay `base`'s step sizes, for h = o.taylor_h,
/// o.taylor_h / 2, ... (o.taylor_points values). Leaves the parameter as it was. Collective.
TaylorReport taylor_test(Driver& driver, Problem& pb, Vec u0, const SolveResult& base,
                         const CheckOptions& o);

}  // namespace rwd::apps
