#pragma once
// Child processes, always from argv vectors (Boost.Process), never shell strings.
// Children get /dev/null as stdin, never a closed fd 0: a process started without
// stdin (CI) would otherwise hand fd 0 to the next pipe it opens.
// Used for the tools xdc drives: ping, iperf3, mpirun, and xdc itself inside a host.
#include <chrono>
#include <string>
#include <vector>

namespace xdc::proc {

struct Result {
  int exit_code = -1;  // -1 when killed for the timeout
  bool timed_out = false;
  std::string out, err;  // captured stdout / stderr
};

// Runs argv[0] (searched in PATH) to completion, capturing output; killed after
// `timeout`. Throws std::runtime_error when it cannot be started.
Result run(const std::vector<std::string>& argv,
           std::chrono::milliseconds timeout = std::chrono::minutes(10));

// Runs argv[0] (searched in PATH) to completion with its input and output on /dev/null
// and returns its exit code (-1: killed after `timeout`, or it could not be started).
// Without pipes, so safe in a thread while another thread starts long-lived children:
// run()'s pipes are inherited by a child started meanwhile (mpirun), which then holds them
// open and run() never sees them close.
int run_quiet(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// A child left running in the background (servers, delay lines, mpirun), its output
// discarded or sent to a file (started empty); terminated (SIGTERM, then SIGKILL) when destroyed.
class Background {
 public:
  explicit Background(const std::vector<std::string>& argv, const std::string& log_file = "");
  // Its stdout to `out_file`, its stderr to `err_file` (both started empty).
  Background(const std::vector<std::string>& argv, const std::string& out_file,
             const std::string& err_file);
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  int pid() const;
  bool running();
  // Waits up to `timeout`; returns the exit code, or -1 if still running.
  int wait_for(std::chrono::milliseconds timeout);
  void terminate();

 private:
  struct Impl;
  Impl* impl_;
};

// Returns once one of `pids` (children of this process) has exited, or after `timeout`:
// a caller polling several children learns of each exit as it happens, and so the order
// in which they exited (a pidfd per child, poll(2)).
void wait_any_exit(const std::vector<int>& pids, std::chrono::milliseconds timeout);

// argv prefixed so that it runs inside emulated host `host` of network `net`:
// {xdc_exe(), "exec", "--name", net, host, "--", argv...}.
std::vector<std::string> in_host(const std::string& net, const std::string& host,
                                 const std::vector<std::string>& argv);

// Path of the running xdc binary (/proc/self/exe), and of a sibling program in the
// same directory (e.g. "xdc-delayline", "xdc-worker").
std::string self_exe();
// The xdc CLI: $XDC_EXE, else this binary if it is xdc, else a sibling named xdc.
std::string xdc_exe();
std::string sibling_exe(const std::string& name);

}  // namespace xdc::proc
