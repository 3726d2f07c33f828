#pragma once
// Where a run happens: its network (built for the run and torn down on every way out, or
// borrowed with --network) and its results directory. Shared by the built-in worker's
// runs (runner.h) and the user's own program's (workload_run.h).
#include <string>

#include "harness/experiment/experiment.h"
#include "harness/lab/lab.h"
#include "harness/network/state.h"
#include "harness/run/runner.h"

namespace xdc::run {

class RunNetwork {
 public:
  // The network `o.network` if it can serve `e`; InputError otherwise.
  static net::NetworkState reusable(const Experiment& e, const RunOptions& o);
  // Builds the experiment's network (across `lab`'s machines when given), or borrows
  // `o.network`. Throws when it cannot be built; a half-built one is undone.
  RunNetwork(const Experiment& e, const RunOptions& o, const lab::Lab* lab);
  ~RunNetwork();  // tears down a network it built
  RunNetwork(const RunNetwork&) = delete;
  RunNetwork& operator=(const RunNetwork&) = delete;
  const net::NetworkState& state() const { return state_; }
  bool owned() const { return owned_; }

 private:
  net::NetworkState state_;
  std::string name_;
  bool owned_ = false;
  const lab::Lab* lab_ = nullptr;
};

// results/<UTC date>-<name>
std::string default_out_dir(const Experiment& e);

}  // namespace xdc::run
