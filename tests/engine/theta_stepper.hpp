#pragma once
// A test stepper whose pullback data is made of the states a step starts and ends in
// (Stepper::pullback_from_states()), as a theta method's in endpoint form is: backward Euler with
// a pointwise implicit cubic decay and an explicit diffusion,
//   y + dt p y^3 = x + dt (nu L x - p x),   x_{i+1} = y,
// solved per point by a fixed number of Newton steps (the same bits however it is driven). The
// adjoint reads both x_i and x_{i+1}: a pullback composed from the wrong state changes the
// gradient.

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "rewind/error.hpp"
#include "steppers.hpp"

namespace rwd::testing {

class ImplicitCubic final : public TestStepper {
 public:
  ImplicitCubic(const Ring& ring, double dt) : ring_(ring), dt_(dt) {
    const auto m = static_cast<std::size_t>(ring.local());
    for (auto* v : {&x_, &p_, &lambda_, &gp_, &x_in_, &x_out_}) v->resize(m);
    reset(0.0);
  }

  std::vector<Field> state() override {
    std::vector<Field> out{ring_.field("x", x_), ring_.field("p", p_)};
    if (clock_) out.push_back(ring_.field("clock", steps_taken_));
    return out;
  }
  /// Also a state variable no stage holds, written by every step (how many steps x has taken):
  /// a restart state stored from composed stages must still hold x_i's.
  void set_clock(bool on) { clock_ = on; }
  std::vector<Field> pullback() override {
    return {ring_.field("x_in", x_in_), ring_.field("x_out", x_out_)};
  }
  std::vector<StateSource> pullback_from_states() override { return sources_; }
  /// What pullback_from_states() says (a test of a wrong declaration changes it).
  void set_sources(std::vector<StateSource> s) { sources_ = std::move(s); }
  StepAccess access(Step) override {  // reads x and p (and the clock), writes x (and the clock)
    if (clock_) return {{0, 1, 2}, {0, 2}};
    return {{0, 1}, {0}};
  }
  std::vector<Field> adjoint_state() override {
    return {ring_.field("lambda", lambda_), ring_.field("dJdp", gp_)};
  }

  void reset(double h) override {
    for (int j = 0; j < ring_.local(); ++j) {
      const int g = ring_.offset() + j;
      x_[j] = 0.8 * std::sin(6.283185307179586 * g / ring_.global()) + 0.3 + h * direction(g);
      p_[j] = 0.5 + 0.25 * std::cos(0.4 * g) + h * 0.3 * direction(g + 17);
    }
    std::fill(lambda_.begin(), lambda_.end(), 0.0);
    std::fill(gp_.begin(), gp_.end(), 0.0);
    steps_taken_.assign(1, 0.0);
  }

  void forward(Step i, const StepContext& context) override {
    if (clock_ && steps_taken_[0] != static_cast<double>(i)) {
      throw Error(ErrorCode::Internal, "ImplicitCubic: step " + std::to_string(i) +
                                           " taken from a state that has taken " +
                                           std::to_string(steps_taken_[0]) + " steps");
    }
    steps_taken_[0] += 1.0;
    if (context.record) x_in_ = x_;
    ring_.gather(x_.data(), ext_);
    for (int j = 0; j < ring_.local(); ++j) {
      const int e = j + 2;
      const double b =
          ext_[e] + dt_ * (nu_ * (ext_[e - 1] - 2.0 * ext_[e] + ext_[e + 1]) - p_[j] * ext_[e]);
      double y = b;
      for (int k = 0; k < 8; ++k) {
        y -= (y + dt_ * p_[j] * y * y * y - b) / (1.0 + 3.0 * dt_ * p_[j] * y * y);
      }
      x_[j] = y;
    }
    if (context.record) x_out_ = x_;
  }

  void begin_adjoint(std::span<const double>) override {
    std::fill(gp_.begin(), gp_.end(), 0.0);
    for (int j = 0; j < ring_.local(); ++j) lambda_[j] = x_[j] - 0.1;  // J = 1/2 |x_n - 0.1|^2
  }

  void adjoint(Step) override {
    const int m = ring_.local();
    std::vector<double> acc(static_cast<std::size_t>(m) + 3, 0.0);
    for (int j = 0; j < m; ++j) {
      const int e = j + 2;
      const double y = x_out_[j];
      const double mu = lambda_[j] / (1.0 + 3.0 * dt_ * p_[j] * y * y);
      acc[e] += mu * (1.0 - dt_ * (2.0 * nu_ + p_[j]));
      acc[e - 1] += dt_ * nu_ * mu;
      acc[e + 1] += dt_ * nu_ * mu;
      gp_[j] -= dt_ * mu * (y * y * y + x_in_[j]);
    }
    std::vector<double> out(static_cast<std::size_t>(m), 0.0);
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
  std::vector<double> x_, p_, lambda_, gp_, x_in_, x_out_, ext_;
  std::vector<StateSource> sources_ = {{false, 0}, {true, 0}};
  bool clock_ = false;
  std::vector<double> steps_taken_ = {0.0};
};

}  // namespace rwd::testing
