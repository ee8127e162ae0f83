#pragma once
// Distributed test steppers with hand-written adjoints, for the engine tests:
//  - Lorenz96Rk4:   nonlinear, classic RK4; pullback data = the four stage inputs.
//  - DiffusionDecay: linear in x, explicit Euler, with a decay field p that is set before
//                    step 0 and read by every step (a parameter the tape must not store).
//  - Lorenz96Leapfrog: a two-step method; restarting needs the previous state too.
// Each rank owns a contiguous, uneven block of a periodic 1-D array.

#include <mpi.h>

#include <cmath>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "rewind/engine/stepper.hpp"

namespace rwd::testing {

using engine::Field;
using engine::Step;
using engine::StepAccess;
using engine::StepContext;

/// A periodic 1-D array of `global` doubles split unevenly: rank r's share is proportional to
/// r + 1 (the last rank takes the remainder). Every rank owns at least 2 entries.
class Ring {
 public:
  Ring(MPI_Comm comm, int global) : comm_(comm), global_(global) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    const int weights = size_ * (size_ + 1) / 2;
    int offset = 0;
    for (int r = 0; r < size_; ++r) {
      const int n = r == size_ - 1 ? global - offset : global * (r + 1) / weights;
      if (r == rank_) {
        offset_ = offset;
        local_ = n;
      }
      offset += n;
    }
  }
  int local() const { return local_; }
  int offset() const { return offset_; }
  int global() const { return global_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return comm_; }

  /// ext = [x_{o-2}, x_{o-1}, x_o .. x_{o+local-1}, x_{o+local}]: two left halo entries, one right.
  void gather(const double* x, std::vector<double>& ext) const {
    ext.assign(local_ + 3, 0.0);
    std::copy(x, x + local_, ext.begin() + 2);
    const int left = (rank_ + size_ - 1) % size_, right = (rank_ + 1) % size_;
    // my last two go right (they are the right neighbour's left halo); my first goes left.
    MPI_Sendrecv(x + local_ - 2, 2, MPI_DOUBLE, right, 1, ext.data(), 2, MPI_DOUBLE, left, 1, comm_,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(x, 1, MPI_DOUBLE, left, 2, ext.data() + local_ + 2, 1, MPI_DOUBLE, right, 2, comm_,
                 MPI_STATUS_IGNORE);
  }

  /// The transpose of gather: adds the halo entries of `ext` back to their owners' x.
  void scatter_add(const std::vector<double>& ext, double* x) const {
    const int left = (rank_ + size_ - 1) % size_, right = (rank_ + 1) % size_;
    double from_right[2], from_left[1];
    MPI_Sendrecv(ext.data(), 2, MPI_DOUBLE, left, 3, from_right, 2, MPI_DOUBLE, right, 3, comm_,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(ext.data() + local_ + 2, 1, MPI_DOUBLE, right, 4, from_left, 1, MPI_DOUBLE, left,
                 4, comm_, MPI_STATUS_IGNORE);
    for (int j = 0; j < local_; ++j) x[j] += ext[j + 2];
    x[local_ - 2] += from_right[0];
    x[local_ - 1] += from_right[1];
    x[0] += from_left[0];
  }

  double sum(double local) const {
    double out = 0;
    MPI_Allreduce(&local, &out, 1, MPI_DOUBLE, MPI_SUM, comm_);
    return out;
  }

  // `name` must outlive the run (the tests pass string literals).
  Field field(const char* name, std::vector<double>& data) const {
    return {name, data, offset_, global_};
  }

 private:
  MPI_Comm comm_;
  int global_, rank_ = 0, size_ = 1, local_ = 0, offset_ = 0;
};

/// Common interface of the test steppers, so one test body drives all of them.
class TestStepper : public engine::Stepper {
 public:
  /// Sets the initial state x_0 + h*dx0 and parameter + h*dparam, clears adjoints.
  virtual void reset(double h) = 0;
  /// Runs n steps forward without recording.
  void run_forward(Step n) {
    for (Step i = 0; i < n; ++i) forward(i, StepContext{});
  }
  /// J at the current state (collective).
  virtual double objective() = 0;
  /// <gradient, (dx0, dparam)>, after an adjoint run (collective).
  virtual double directional_derivative() = 0;
  /// The gradient on this rank (adjoint of x_0 then of the parameter), for bitwise comparison.
  virtual std::vector<double> gradient() = 0;
  /// For online runs: the run ends at x_stop_at (0: never says so).
  Step stop_at = 0;
  bool finished(Step i) override { return stop_at > 0 && i >= stop_at; }
};

// Deterministic perturbation directions and initial states, the same at every rank count.
inline double initial_value(int j) {
  return 8.0 + 0.5 * std::sin(0.7 * j + 0.3);
}
inline double direction(int j) {
  return std::cos(1.3 * j + 0.1);
}

/// J = 1/2 |x_n - 0.1|^2 over the ring (the steppers with a state and a parameter field).
inline double distance_objective(const Ring& ring, const std::vector<double>& x) {
  double local = 0;
  for (double v : x) local += 0.5 * (v - 0.1) * (v - 0.1);
  return ring.sum(local);
}
/// <(lambda, dJ/dp), (dx0, dparam)> for the directions those steppers' reset() perturbs in.
inline double state_and_parameter_derivative(const Ring& ring, const std::vector<double>& lambda,
                                             const std::vector<double>& gp) {
  double local = 0;
  for (int j = 0; j < ring.local(); ++j) {
    const int g = ring.offset() + j;
    local += lambda[j] * direction(g) + gp[j] * 0.3 * direction(g + 17);
  }
  return ring.sum(local);
}
/// a then b.
inline std::vector<double> joined(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The Lorenz-96 right-hand side f_j = (x_{j+1} - x_{j-2}) x_{j-1} - x_j + F on a Ring, and
/// the product of its Jacobian's transpose with a vector; shared by the two Lorenz steppers.
class Lorenz96Rhs {
 public:
  explicit Lorenz96Rhs(const Ring& ring) : ring_(ring) {}

  std::vector<double> operator()(const std::vector<double>& y, double forcing) {
    return (*this)(y, std::vector<double>(static_cast<std::size_t>(ring_.local()), forcing));
  }

  std::vector<double> operator()(const std::vector<double>& y, const std::vector<double>& forcing) {
    ring_.gather(y.data(), ext_);
    std::vector<double> f(ring_.local());
    for (int j = 0; j < ring_.local(); ++j) {
      const int e = j + 2;
      f[j] = (ext_[e + 1] - ext_[e - 2]) * ext_[e - 1] - ext_[e] + forcing[j];
    }
    return f;
  }

  // J(y)^T w.
  std::vector<double> transpose(const std::vector<double>& y, const std::vector<double>& w) {
    ring_.gather(y.data(), ext_);
    std::vector<double> acc(ring_.local() + 3, 0.0);
    for (int j = 0; j < ring_.local(); ++j) {
      const int e = j + 2;
      acc[e + 1] += w[j] * ext_[e - 1];
      acc[e - 2] -= w[j] * ext_[e - 1];
      acc[e - 1] += w[j] * (ext_[e + 1] - ext_[e - 2]);
      acc[e] -= w[j];
    }
    std::vector<double> out(ring_.local(), 0.0);
    ring_.scatter_add(acc, out.data());
    return out;
  }

 private:
  const Ring& ring_;
  std::vector<double> ext_;
};

/// dx_j/dt = (x_{j+1} - x_{j-2}) x_{j-1} - x_j + F, classic RK4. The forcing F is a state
/// variable (a field, uniform) that every step reads and none writes: restart sets leave it out,
/// a parked recording keeps it.
class Lorenz96Rk4 final : public TestStepper {
 public:
  Lorenz96Rk4(const Ring& ring, double dt) : ring_(ring), rhs_(ring), dt_(dt) {
    const int m = ring.local();
    x_.resize(m);
    lambda_.resize(m);
    for (auto& y : stages_) y.resize(m);
    reset(0.0);
  }

  std::vector<Field> state() override { return {ring_.field("x", x_), ring_.field("F", forcing_)}; }
  std::vector<Field> pullback() override {
    return {ring_.field("y1", stages_[0]), ring_.field("y2", stages_[1]),
            ring_.field("y3", stages_[2]), ring_.field("y4", stages_[3])};
  }
  StepAccess access(Step) override { return {{0, 1}, {0}}; }  // reads x and F, writes x
  /// lambda and this rank's part of dJ/dF (one value a rank).
  std::vector<Field> adjoint_state() override {
    return {ring_.field("lambda", lambda_),
            {"dJdF", std::span<double>(&gforcing_, 1), ring_.rank(), ring_.size()}};
  }

  void reset(double h) override {
    for (int j = 0; j < ring_.local(); ++j) {
      x_[j] = initial_value(ring_.offset() + j) + h * direction(ring_.offset() + j);
    }
    forcing_.assign(static_cast<std::size_t>(ring_.local()), 8.0 + h * 0.7);
    std::fill(lambda_.begin(), lambda_.end(), 0.0);
    gforcing_ = 0.0;
  }

  void forward(Step, const StepContext& context) override {
    const bool record = context.record;
    const int m = ring_.local();
    std::vector<double> k[4];
    std::vector<double> y = x_;
    for (int s = 0; s < 4; ++s) {
      if (record) stages_[s] = y;
      k[s] = rhs_(y, forcing_);
      if (s < 3) {
        const double c = s < 2 ? 0.5 * dt_ : dt_;
        for (int j = 0; j < m; ++j) y[j] = x_[j] + c * k[s][j];
      }
    }
    for (int j = 0; j < m; ++j) {
      x_[j] += dt_ / 6.0 * (k[0][j] + 2.0 * k[1][j] + 2.0 * k[2][j] + k[3][j]);
    }
  }

  void begin_adjoint(std::span<const double>) override {  // J = 1/2 |x_n|^2
    lambda_ = x_;
    gforcing_ = 0.0;
  }

  void adjoint(Step) override {
    const int m = ring_.local();
    std::vector<double> lx = lambda_, lk[4];
    const double w[4] = {dt_ / 6.0, dt_ / 3.0, dt_ / 3.0, dt_ / 6.0};
    for (int s = 0; s < 4; ++s) {
      lk[s].resize(m);
      for (int j = 0; j < m; ++j) lk[s][j] = w[s] * lambda_[j];
    }
    for (int s = 3; s >= 0; --s) {
      double local = 0;
      for (int j = 0; j < m; ++j) local += lk[s][j];
      gforcing_ += local;
      const std::vector<double> ly = rhs_.transpose(stages_[s], lk[s]);
      const double c = s == 3 ? dt_ : 0.5 * dt_;
      for (int j = 0; j < m; ++j) {
        lx[j] += ly[j];
        if (s > 0) lk[s - 1][j] += c * ly[j];
      }
    }
    lambda_ = lx;
  }

  double objective() override {
    double local = 0;
    for (double v : x_) local += 0.5 * v * v;
    return ring_.sum(local);
  }
  double directional_derivative() override {
    double local = 0;
    for (int j = 0; j < ring_.local(); ++j) local += lambda_[j] * direction(ring_.offset() + j);
    return ring_.sum(local) + ring_.sum(gforcing_) * 0.7;
  }
  std::vector<double> gradient() override {
    std::vector<double> g = lambda_;
    g.push_back(ring_.sum(gforcing_));
    return g;
  }

 private:
  const Ring& ring_;
  Lorenz96Rhs rhs_;
  double dt_;
  std::vector<double> forcing_;
  std::vector<double> x_, lambda_;
  std::vector<double> stages_[4];
  double gforcing_ = 0.0;
};

/// x' = x + dt (nu (x_{j-1} - 2 x_j + x_{j+1}) - p_j x_j): linear in x; p is a parameter field
/// set before step 0 and read by every step. By default J = 1/2 |x_n - 0.1|^2; with receivers
/// (the ensemble tests) the output is x_n at a few cells and begin_adjoint() takes its
/// cotangent as the seed.
class DiffusionDecay final : public TestStepper {
 public:
  DiffusionDecay(const Ring& ring, double dt) : ring_(ring), dt_(dt) {
    const int m = ring.local();
    x_.resize(m);
    p_.resize(m);
    lambda_.resize(m);
    gp_.resize(m);
    x_in_.resize(m);
    reset(0.0);
  }

  std::vector<Field> state() override { return {ring_.field("x", x_), ring_.field("p", p_)}; }
  std::vector<Field> pullback() override { return {ring_.field("x_in", x_in_)}; }
  StepAccess access(Step) override { return {{0, 1}, {0}}; }  // reads x and p, writes x
  std::vector<Field> adjoint_state() override {
    return {ring_.field("lambda", lambda_), ring_.field("dJdp", gp_)};
  }

  void reset(double h) override { reset(h, h); }

  /// x_0 perturbed by h_state, the parameter field by h_param.
  void reset(double h_state, double h_param) {
    for (int j = 0; j < ring_.local(); ++j) {
      const int g = ring_.offset() + j;
      x_[j] = initial_(g) + h_state * direction(g);
      p_[j] = 0.5 + 0.25 * std::cos(0.4 * g) + h_param * 0.3 * direction(g + 17);
    }
    std::fill(lambda_.begin(), lambda_.end(), 0.0);
    std::fill(gp_.begin(), gp_.end(), 0.0);
  }

  /// x_0 as a function of the global index (default: one period of a sine).
  void set_initial(std::function<double(int)> f) { initial_ = std::move(f); }
  /// The cells whose values at x_n are the output (readings()) and whose cotangents the seed of
  /// begin_adjoint() holds.
  void set_receivers(std::vector<int> cells) { receivers_ = std::move(cells); }
  /// x_n at the receivers, on every rank.
  std::vector<double> readings() const {
    std::vector<double> mine(receivers_.size(), 0.0), all(receivers_.size(), 0.0);
    for (std::size_t r = 0; r < receivers_.size(); ++r) {
      const int j = receivers_[r] - ring_.offset();
      if (j >= 0 && j < ring_.local()) mine[r] = x_[static_cast<std::size_t>(j)];
    }
    MPI_Allreduce(mine.data(), all.data(), static_cast<int>(all.size()), MPI_DOUBLE, MPI_SUM,
                  ring_.comm());
    return all;
  }
  /// This rank's block of dJ/dp after an adjoint run.
  const std::vector<double>& parameter_gradient() const { return gp_; }
  /// This rank's block of the direction the parameter is perturbed in by reset().
  std::vector<double> parameter_direction() const {
    std::vector<double> d(static_cast<std::size_t>(ring_.local()));
    for (int j = 0; j < ring_.local(); ++j) d[j] = 0.3 * direction(ring_.offset() + j + 17);
    return d;
  }

  void forward(Step, const StepContext& context) override {
    const bool record = context.record;
    if (record) x_in_ = x_;
    ring_.gather(x_.data(), ext_);
    for (int j = 0; j < ring_.local(); ++j) {
      const int e = j + 2;
      x_[j] += dt_ * (nu_ * (ext_[e - 1] - 2.0 * ext_[e] + ext_[e + 1]) - p_[j] * ext_[e]);
    }
  }

  void begin_adjoint(std::span<const double> seed) override {
    std::fill(gp_.begin(), gp_.end(), 0.0);
    if (seed.empty()) {
      for (int j = 0; j < ring_.local(); ++j) lambda_[j] = x_[j] - 0.1;  // J = 1/2 |x_n - 0.1|^2
      return;
    }
    std::fill(lambda_.begin(), lambda_.end(), 0.0);
    for (std::size_t r = 0; r < receivers_.size() && r < seed.size(); ++r) {
      const int j = receivers_[r] - ring_.offset();
      if (j >= 0 && j < ring_.local()) lambda_[static_cast<std::size_t>(j)] += seed[r];
    }
  }

  void adjoint(Step) override {
    const int m = ring_.local();
    std::vector<double> acc(m + 3, 0.0);
    for (int j = 0; j < m; ++j) {
      const int e = j + 2;
      const double l = lambda_[j];
      acc[e] += l * (1.0 - dt_ * (2.0 * nu_ + p_[j]));
      acc[e - 1] += dt_ * nu_ * l;
      acc[e + 1] += dt_ * nu_ * l;
      gp_[j] -= dt_ * x_in_[j] * l;
    }
    std::vector<double> out(m, 0.0);
    ring_.scatter_add(acc, out.data());
    lambda_ = out;
  }

  double objective() override { return distance_objective(ring_, x_); }
  double directional_derivative() override {
    return state_and_parameter_derivative(ring_, lambda_, gp_);
  }
  std::vector<double> gradient() override { return joined(lambda_, gp_); }

 private:
  const Ring& ring_;
  double dt_, nu_ = 0.2;
  std::vector<double> x_, p_, lambda_, gp_, x_in_, ext_;
  std::function<double(int)> initial_ = [this](int g) {
    return std::sin(6.283185307179586 * g / ring_.global());
  };
  std::vector<int> receivers_;
};

/// Leapfrog on Lorenz-96: u_{i+1} = u_{i-1} + 2 dt f(u_i), started by one forward Euler step.
/// State variables: u_prev (0) and u (1); step 0 reads only u.
class Lorenz96Leapfrog final : public TestStepper {
 public:
  Lorenz96Leapfrog(const Ring& ring, double dt) : ring_(ring), rhs_(ring), dt_(dt) {
    const int m = ring.local();
    u_prev_.resize(m);
    u_.resize(m);
    u_in_.resize(m);
    l_prev_.resize(m);
    l_.resize(m);
    reset(0.0);
  }

  std::vector<Field> state() override {
    return {ring_.field("u_prev", u_prev_), ring_.field("u", u_)};
  }
  std::vector<Field> pullback() override { return {ring_.field("u_in", u_in_)}; }
  StepAccess access(Step i) override {
    if (i == 0) return {{1}, {0, 1}};
    return {{0, 1}, {0, 1}};
  }

  void reset(double h) override {
    for (int j = 0; j < ring_.local(); ++j) {
      const int g = ring_.offset() + j;
      u_[j] = initial_value(g) + h * direction(g);
      u_prev_[j] = -1e300;  // garbage: step 0 must not read it, and no restart may rely on it
    }
    std::fill(l_prev_.begin(), l_prev_.end(), 0.0);
    std::fill(l_.begin(), l_.end(), 0.0);
  }

  void forward(Step i, const StepContext& context) override {
    const bool record = context.record;
    if (record) u_in_ = u_;
    const std::vector<double> f = rhs_(u_, 8.0);
    for (int j = 0; j < ring_.local(); ++j) {
      const double next = i == 0 ? u_[j] + dt_ * f[j] : u_prev_[j] + 2.0 * dt_ * f[j];
      u_prev_[j] = u_[j];
      u_[j] = next;
    }
  }

  void begin_adjoint(std::span<const double>) override {
    l_ = u_;
    std::fill(l_prev_.begin(), l_prev_.end(), 0.0);
  }

  void adjoint(Step i) override {
    const double c = i == 0 ? dt_ : 2.0 * dt_;
    std::vector<double> w(ring_.local());
    for (int j = 0; j < ring_.local(); ++j) w[j] = c * l_[j];
    const std::vector<double> jt = rhs_.transpose(u_in_, w);
    for (int j = 0; j < ring_.local(); ++j) {
      const double lu = l_prev_[j] + jt[j] + (i == 0 ? l_[j] : 0.0);
      const double lprev = i == 0 ? 0.0 : l_[j];
      l_[j] = lu;
      l_prev_[j] = lprev;
    }
  }

  double objective() override {
    double local = 0;
    for (double v : u_) local += 0.5 * v * v;
    return ring_.sum(local);
  }
  double directional_derivative() override {
    double local = 0;
    for (int j = 0; j < ring_.local(); ++j) local += l_[j] * direction(ring_.offset() + j);
    return ring_.sum(local);
  }
  std::vector<double> gradient() override { return l_; }

 private:
  const Ring& ring_;
  Lorenz96Rhs rhs_;
  double dt_;
  std::vector<double> u_prev_, u_, u_in_, l_prev_, l_;
};

/// A TestStepper that forwards everything to another, for wrappers that watch or interfere
/// (throw at a step, change a replayed step, stop for a kill): they override the one call.
class ForwardingStepper : public TestStepper {
 public:
  explicit ForwardingStepper(TestStepper& inner) : inner_(inner) {}
  std::vector<Field> state() override { return inner_.state(); }
  std::vector<Field> pullback() override { return inner_.pullback(); }
  StepAccess access(Step i) override { return inner_.access(i); }
  std::vector<Field> adjoint_state() override { return inner_.adjoint_state(); }
  void loaded(engine::Kind kind) override { inner_.loaded(kind); }
  void forward(Step i, const StepContext& c) override { inner_.forward(i, c); }
  void adjoint(Step i) override { inner_.adjoint(i); }
  void begin_adjoint(std::span<const double> seed) override { inner_.begin_adjoint(seed); }
  void reset(double h) override { inner_.reset(h); }
  double objective() override { return inner_.objective(); }
  double directional_derivative() override { return inner_.directional_derivative(); }
  std::vector<double> gradient() override { return inner_.gradient(); }

 protected:
  TestStepper& inner_;
};

}  // namespace rwd::testing
