// The xdc-delayline program in a real namespace: its start-up answer, its rules, its
// stats file, its signals, and that it never outlives its interface.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "netem/shaper/delayline_process.h"
#include "netem/shaper/run.h"
#include "netem/shaper/shaper.h"
#include "tests/shaper/testbed.h"

namespace xdc::testbed {
namespace {

using namespace std::chrono_literals;

bool alive(pid_t pid) {
  waitpid(pid, nullptr, WNOHANG);  // reap it if it exited (we are its parent)
  return kill(pid, 0) == 0;
}

bool gone_within(pid_t pid, std::chrono::milliseconds limit) {
  for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;
       std::this_thread::sleep_for(20ms))
    if (!alive(pid)) return true;
  return !alive(pid);
}

int nfqueue_rules(const std::string& ns) {
  std::string out = netem::run_argv({"iptables-legacy", "-w", "-t", "mangle", "-S"}, ns).output;
  int n = 0;
  for (size_t pos = 0; (pos = out.find("NFQUEUE", pos)) != std::string::npos; ++pos) ++n;
  return n;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Whatever a test leaves (a delay line, its log) goes when it ends, pass or fail.
struct Cleanup {
  const Line& l;
  ~Cleanup() { netem::clean_delaylines(l.gw, "/run/xdc-delayline"); }
};

netem::DelaylineSpec spec_for(const Line& l, uint64_t delay_us) {
  netem::DelaylineSpec s;
  s.netns = l.gw;
  s.ifname = Line::kGwToB;
  s.tag = "test";
  s.queue_num = 42;
  s.params.delay_us = delay_us;
  s.stats_path = "/run/xdc-delayline/" + l.gw + ".stats.json";
  s.log_path = "/run/xdc-delayline/" + l.gw + ".log";
  return s;
}

TEST(DelaylineProgram, RejectsBadArguments) {
  netem::RunResult r =
      netem::run_argv({netem::delayline_program(), "--if=x", "--queue=1", "--loss-p=250"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--loss-p=250: expected a percentage"), std::string::npos) << r.output;
  r = netem::run_argv({netem::delayline_program(), "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown option"), std::string::npos) << r.output;
}

TEST(DelaylineProgram, StatsRulesAndCleanExit) {
  Line l("dlprog");
  Cleanup cleanup{l};
  netem::DelaylineSpec s = spec_for(l, 2000);
  pid_t pid = netem::start_delayline(s);
  EXPECT_EQ(nfqueue_rules(l.gw), 2);
  PingResult p = ping(l.a, l.b_ip, 20, 0.01, 5);
  EXPECT_EQ(p.received, 20);
  kill(pid, SIGUSR1);
  std::this_thread::sleep_for(200ms);
  nlohmann::json st = read_json(s.stats_path);
  EXPECT_EQ(st["packets"], 20) << st.dump();
  EXPECT_EQ(st["released"], 20);
  EXPECT_EQ(st["dropped"], 0);
  EXPECT_EQ(st["kernel_queue_dropped"], 0);
  // Transit packets carry their arrival stamp to the delay line (FORWARD hook): the
  // delay counts from the arrival, not from when the delay line read the packet.
  EXPECT_EQ(st["stamped"], 20);
  EXPECT_EQ(st["pid"], pid);
  std::printf("delay line stats after 20 pings: %s\n", st.dump().c_str());
  EXPECT_EQ(netem::stop_delayline(pid), netem::StopResult::kTerminated);
  EXPECT_EQ(nfqueue_rules(l.gw), 0);
  EXPECT_NE(access(s.stats_path.c_str(), F_OK), 0) << "stats file left behind";
  std::ifstream log(s.log_path);
  std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("exit; packets 20"), std::string::npos) << text;
  unlink(s.log_path.c_str());
}

TEST(DelaylineProgram, SecondBinderOfAQueueFailsClearly) {
  Line l("dlbusy");
  Cleanup cleanup{l};
  netem::DelaylineSpec s = spec_for(l, 1000);
  pid_t first = netem::start_delayline(s);
  try {
    pid_t second = netem::start_delayline(s);
    netem::stop_delayline(second);
    ADD_FAILURE() << "a second delay line bound the same queue";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bind NFQUEUE 42"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(alive(first));
  EXPECT_EQ(nfqueue_rules(l.gw), 2);  // the first one's rules are untouched
  EXPECT_EQ(ping(l.a, l.b_ip, 3, 0.05, 5).received, 3);
  netem::stop_delayline(first);
}

TEST(DelaylineProgram, ReleasesHeldPacketsOnExit) {
  Line l("dlhold");
  Cleanup cleanup{l};
  // Held for 60 s, longer than the ping waits for its reply: a reply means the stop
  // released it, however long the stop took.
  pid_t pid = netem::start_delayline(spec_for(l, 60'000'000));
  std::thread stopper([&] {
    std::this_thread::sleep_for(500ms);
    netem::stop_delayline(pid);
  });
  PingResult p = ping(l.a, l.b_ip, 1, 0.2, 30);
  stopper.join();
  EXPECT_EQ(p.received, 1) << "held packet was not released at shutdown\n" << p.output;
}

TEST(DelaylineProgram, ExitsWhenItsInterfaceDisappears) {
  Line l("dlif");
  Cleanup cleanup{l};
  pid_t pid = netem::start_delayline(spec_for(l, 1000));
  ASSERT_TRUE(alive(pid));
  must_run({"ip", "link", "del", Line::kGwToB}, l.gw);
  EXPECT_TRUE(gone_within(pid, 60s));  // a hang guard: it exits once it sees the loss
}

}  // namespace
}  // namespace xdc::testbed
