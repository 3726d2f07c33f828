// LinkShaper's contract on a real A — GW — B line: what each backend installs, that
// destruction / undo_shape() removes all of it, that a detached delay line outlives its
// shaper and dies with its namespace.
#include "netem/shaper/shaper.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "netem/nl/netns.h"
#include "netem/shaper/nfqueue_rule.h"
#include "netem/shaper/qdisc.h"
#include "netem/shaper/run.h"
#include "tests/common/round_trip.h"
#include "tests/common/stall_meter.h"
#include "tests/shaper/testbed.h"

namespace xdc::testbed {
namespace {

using netem::Backend;
using xdc::testing::least_bounds;
using xdc::testing::probe_with_lateness;
using xdc::testing::ProbedRoundTrips;
using xdc::testing::RoundTrips;
using xdc::testing::ShapedDirection;
using xdc::testing::within;
using xdc::testing::zero_delay_base;

bool alive(pid_t pid) {
  return pid > 0 && kill(pid, 0) == 0;
}

int nfqueue_rules(const std::string& ns) {
  std::string out = netem::run_argv({"iptables-legacy", "-w", "-t", "mangle", "-S"}, ns).output;
  int n = 0;
  for (size_t pos = 0; (pos = out.find("NFQUEUE", pos)) != std::string::npos; ++pos) ++n;
  return n;
}

bool wait_for(const std::function<bool()>& cond, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return cond();
}

// A fixed delay-line seed for the tests that check a drawn fraction against 3 sigma: the
// draws repeat from run to run, so such a test does not fail by the 0.3% chance the bound
// allows (tests/delayline/ checks the distributions over 200,000 draws).
netem::ShapeOptions seeded() {
  netem::ShapeOptions o;
  o.seed = 20261127;
  return o;
}

netem::LinkParams delay_and_rate() {
  netem::LinkParams p;
  p.delay_us = 5000;
  p.rate_bps = 100'000'000;
  return p;
}

// nl::net_counters reads the namespace's own /proc/net/snmp and /proc/net/netstat (the
// fidelity figures' UDP receive errors, bench_wan's TCP segments, a run's TCP timeouts):
// 20 echo probes A -> B -> A count 20 datagrams received in B and 20 in A.
TEST(Netns, SnmpCountersAreTheNamespacesOwn) {
  Line l("snmp");
  auto in = [](const std::string& ns) {
    return nl::net_counters(ns, "snmp", "Udp").at("InDatagrams");
  };
  const double a = in(l.a), b = in(l.b);
  PingResult r = udp_probe(l.a, l.b, l.b_ip, 20, 0.001, 0.3);
  ASSERT_EQ(r.received, 20);
  EXPECT_EQ(in(l.b) - b, 20);
  EXPECT_EQ(in(l.a) - a, 20);
  EXPECT_GT(nl::net_counters(l.a, "snmp", "Tcp").count("RetransSegs"), 0u);
  EXPECT_GT(nl::net_counters(l.a, "netstat", "TcpExt").count("TCPTimeouts"), 0u);
  EXPECT_THROW(nl::net_counters(l.a, "snmp", "NoSuchGroup"), std::runtime_error);
  EXPECT_THROW(nl::net_counters(l.a, "route", "Tcp"), std::invalid_argument);
}

TEST(Shaper, UnimpairedParamsInstallNothing) {
  Line l("unimp");
  auto s = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "t"}, {});
  EXPECT_FALSE(s->record().active);
  EXPECT_STREQ(s->backend_name(), "none");
  EXPECT_EQ(s->record().to_json()["backend"], "none");
  EXPECT_EQ(netem::root_qdisc_kind(l.gw, Line::kGwToB), "noqueue");
}

TEST(Shaper, KernelBackendWithoutNetemSaysSo) {
  std::string why;
  if (netem::kernel_has_netem(&why)) GTEST_SKIP() << "this kernel has sch_netem";
  std::printf("kernel_has_netem() = false: %s\n", why.c_str());
  Line l("nonetem");
  try {
    netem::shape_egress(Backend::kKernel, {l.gw, Line::kGwToB, "t"}, delay_and_rate());
    FAIL() << "kernel backend accepted without sch_netem";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no sch_netem"), std::string::npos) << e.what();
  }
  EXPECT_EQ(netem::root_qdisc_kind(l.gw, Line::kGwToB), "noqueue");
  EXPECT_EQ(netem::resolve_backend(Backend::kAuto), Backend::kUserspace);
}

TEST(Shaper, UserspaceInstallsAndRemovesEverything) {
  Line l("us");
  pid_t pid;
  std::string stats, log;
  {
    auto s = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "t"}, delay_and_rate());
    const auto& r = s->record();
    EXPECT_TRUE(r.active);
    EXPECT_EQ(r.backend, Backend::kUserspace);
    EXPECT_EQ(r.rate_qdisc, "tbf");
    EXPECT_EQ(r.root_handle, netem::kRootHandle);
    pid = r.delayline_pid;
    stats = r.stats_path;
    log = r.log_path;
    EXPECT_TRUE(netem::is_delayline(pid, l.gw));
    EXPECT_EQ(netem::root_qdisc_kind(l.gw, Line::kGwToB), "tbf");
    EXPECT_EQ(nfqueue_rules(l.gw), 2);  // mangle FORWARD and OUTPUT
    EXPECT_EQ(access(r.stats_path.c_str(), R_OK), 0) << r.stats_path;
    PingResult p = ping(l.a, l.b_ip, 5, 0.05, 5);
    EXPECT_EQ(p.received, 5);
    EXPECT_GT(median(p.rtt_ms), 5.0);
  }
  EXPECT_FALSE(alive(pid));
  EXPECT_EQ(nfqueue_rules(l.gw), 0);
  EXPECT_EQ(netem::root_qdisc_kind(l.gw, Line::kGwToB), "noqueue");
  EXPECT_NE(access(stats.c_str(), F_OK), 0) << stats;
  EXPECT_NE(access(log.c_str(), F_OK), 0) << log;
  EXPECT_EQ(ping(l.a, l.b_ip, 3, 0.05, 5).received, 3);
}

// run_argv's input is the program's stdin, whole even past a pipe's buffer; none: /dev/null.
TEST(Shaper, RunArgvGivesItsInputAsStdin) {
  EXPECT_EQ(netem::run_argv({"cat"}, "", "two\nlines\n").output, "two\nlines\n");
  EXPECT_EQ(netem::run_argv({"wc", "-c"}, "", std::string(1 << 20, 'x')).output, "1048576\n");
  EXPECT_EQ(netem::run_argv({"cat"}).output, "");
}

// The steering rules come and go together: a refused add leaves none, and the removal
// deletes what is left when one was already removed by hand.
TEST(Shaper, NfqueueRulesComeAndGoTogether) {
  Line l("nfq");
  EXPECT_THROW(netem::NfqueueRules(l.gw, std::string(20, 'x'), 77), std::runtime_error);
  EXPECT_EQ(nfqueue_rules(l.gw), 0);
  {
    netem::NfqueueRules r(l.gw, "nfq0", 77);
    EXPECT_EQ(nfqueue_rules(l.gw), 2);
    must_run({"iptables-legacy", "-w", "-t", "mangle", "-D", "OUTPUT", "-o", "nfq0", "-j",
              "NFQUEUE", "--queue-num", "77"},
             l.gw);
    EXPECT_EQ(nfqueue_rules(l.gw), 1);
  }
  EXPECT_EQ(nfqueue_rules(l.gw), 0);
}

// gso_max_segs of `ifname` in `netns`, from `ip -d -j link show`.
long gso_max_segs(const std::string& netns, const std::string& ifname) {
  auto j = nlohmann::json::parse(
      netem::run_argv({"ip", "-d", "-j", "link", "show", "dev", ifname}, netns).output);
  return j.at(0).at("gso_max_segs").get<long>();
}

// With loss the kernel backend makes the veth peers feeding the gateway send wire
// packets (kernel_netem.h), records them, and puts them back when undone, also from a
// detached record. Runs where the kernel has sch_netem (the UML ctest entry).
TEST(Shaper, KernelLossMakesFeedersSendWirePackets) {
  std::string why;
  if (!netem::kernel_has_netem(&why)) {
    if (std::getenv("XDC_UML_GUEST")) FAIL() << "UML guest without sch_netem: " << why;
    GTEST_SKIP() << "this kernel has no sch_netem";
  }
  Line l("feed");
  const long before = gso_max_segs(l.a, "eth0");
  netem::LinkParams p;
  p.delay_us = 1000;
  p.loss.kind = netem::LossModel::Kind::kRandom;
  p.loss.p_pct = 1;
  nlohmann::json saved;
  {
    auto s = netem::shape_egress(Backend::kKernel, {l.gw, Line::kGwToB, "t"}, p);
    ASSERT_EQ(s->record().feeders.size(), 1u);  // A's eth0 feeds to-a; to-b is the shaped one
    EXPECT_EQ(s->record().feeders[0].netns, l.a);
    EXPECT_EQ(gso_max_segs(l.a, "eth0"), 1);
    EXPECT_EQ(gso_max_segs(l.b, "eth0"), before);  // B's eth0 feeds the other direction
    EXPECT_EQ(netem::root_qdisc_kind(l.gw, Line::kGwToB), "netem");
    saved = s->record().to_json();
    s->detach();
  }
  EXPECT_EQ(gso_max_segs(l.a, "eth0"), 1);
  netem::undo_shape(netem::ShapeRecord::from_json(saved));
  EXPECT_EQ(gso_max_segs(l.a, "eth0"), before);
  EXPECT_EQ(netem::root_qdisc_kind(l.gw, Line::kGwToB), "noqueue");
  p.loss = {};  // delay alone acts the same on an aggregate: nothing to change
  auto s = netem::shape_egress(Backend::kKernel, {l.gw, Line::kGwToB, "t"}, p);
  EXPECT_TRUE(s->record().feeders.empty());
  EXPECT_EQ(gso_max_segs(l.a, "eth0"), before);
}

TEST(Shaper, FilterRulesCannotBypassTheDelayLine) {
  Line l("filt");
  must_run({"iptables-legacy", "-w", "-I", "FORWARD", "-j", "ACCEPT"}, l.gw);
  must_run({"iptables-legacy", "-w", "-I", "OUTPUT", "-j", "ACCEPT"}, l.gw);
  netem::LinkParams p;
  p.delay_us = 5000;
  auto s = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "t"}, p);
  EXPECT_GT(median(udp_probe(l.a, l.b, l.b_ip, 10, 0.01, 0.5).rtt_ms), 4.9);  // transit
  EXPECT_GT(median(ping(l.gw, l.b_ip, 5, 0.02, 5).rtt_ms), 4.9);              // its own
}

TEST(Shaper, RateOnlyNeedsNoDelayLine) {
  Line l("rate");
  netem::LinkParams p;
  p.rate_bps = 50'000'000;
  auto s = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "t"}, p);
  EXPECT_EQ(s->record().delayline_pid, 0);
  EXPECT_EQ(netem::root_qdisc_kind(l.gw, Line::kGwToB), "tbf");
}

TEST(Shaper, HtbAboveTbfRange) {
  Line l("htb");
  netem::LinkParams p;
  p.rate_bps = 40'000'000'000ULL;  // 40 Gbit/s: beyond tbf's 32-bit bytes/s
  auto s = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "t"}, p);
  EXPECT_EQ(s->record().rate_qdisc, "htb");
  EXPECT_EQ(netem::root_qdisc_kind(l.gw, Line::kGwToB), "htb");
  EXPECT_EQ(ping(l.a, l.b_ip, 3, 0.05, 5).received, 3);
}

TEST(Shaper, DetachedShaperIsUndoneFromItsRecord) {
  Line l("detach");
  nlohmann::json saved;
  {
    auto s = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "t"}, delay_and_rate());
    s->detach();
    saved = s->record().to_json();
  }
  netem::ShapeRecord r = netem::ShapeRecord::from_json(saved);
  EXPECT_TRUE(alive(r.delayline_pid)) << saved.dump();
  EXPECT_EQ(nfqueue_rules(l.gw), 2);
  EXPECT_EQ(netem::find_delaylines(l.gw), std::vector<pid_t>{r.delayline_pid});
  netem::undo_shape(r);
  EXPECT_FALSE(alive(r.delayline_pid));
  EXPECT_EQ(nfqueue_rules(l.gw), 0);
  EXPECT_EQ(netem::root_qdisc_kind(l.gw, Line::kGwToB), "noqueue");
  netem::undo_shape(r);  // idempotent
}

TEST(Shaper, CleanStopsWhatAPrefixNames) {
  Line l("clean");
  netem::LinkParams p;
  p.delay_us = 1000;
  std::vector<netem::ShapeRecord> records;
  for (const char* ifname : {Line::kGwToA, Line::kGwToB}) {
    auto s = netem::shape_egress(Backend::kUserspace, {l.gw, ifname, "t"}, p);
    s->detach();
    records.push_back(s->record());
  }
  EXPECT_EQ(netem::find_delaylines(l.gw).size(), 2u);
  EXPECT_EQ(netem::clean_delaylines("xdct-clean-no-such-prefix"), 0);
  EXPECT_EQ(netem::clean_delaylines(l.gw), 2);
  EXPECT_TRUE(netem::find_delaylines(l.gw).empty());
  for (const auto& r : records) {
    EXPECT_NE(access(r.log_path.c_str(), F_OK), 0) << r.log_path;
    EXPECT_NE(access(r.stats_path.c_str(), F_OK), 0) << r.stats_path;
    waitpid(r.delayline_pid, nullptr, WNOHANG);
    EXPECT_FALSE(alive(r.delayline_pid));
  }
  EXPECT_EQ(nfqueue_rules(l.gw), 0);
}

TEST(Shaper, UndoManyAtOnce) {
  Line l("many");
  netem::LinkParams p;
  p.delay_us = 1000;
  p.rate_bps = 10'000'000;
  std::vector<netem::ShapeRecord> records;
  for (const char* ifname : {Line::kGwToA, Line::kGwToB}) {
    auto s = netem::shape_egress(Backend::kUserspace, {l.gw, ifname, "t"}, p);
    s->detach();
    records.push_back(s->record());
  }
  netem::undo_shapes(records);
  for (const auto& r : records) EXPECT_FALSE(alive(r.delayline_pid));
  EXPECT_EQ(nfqueue_rules(l.gw), 0);
  EXPECT_EQ(netem::root_qdisc_kind(l.gw, Line::kGwToA), "noqueue");
  EXPECT_EQ(netem::root_qdisc_kind(l.gw, Line::kGwToB), "noqueue");
}

TEST(Shaper, DelayLineDiesWithItsNamespace) {
  auto l = std::make_unique<Line>("nsgone");
  netem::LinkParams p;
  p.delay_us = 1000;
  auto s = netem::shape_egress(Backend::kUserspace, {l->gw, Line::kGwToB, "t"}, p);
  s->detach();
  pid_t pid = s->record().delayline_pid;
  ASSERT_TRUE(alive(pid));
  l.reset();  // deletes the namespaces
  EXPECT_TRUE(wait_for(
      [&] {
        waitpid(pid, nullptr, WNOHANG);  // we are its parent: reap it once it exits
        return !alive(pid);
      },
      std::chrono::seconds(3)));
  netem::undo_shape(s->record());  // what `xdc down` does: nothing left to stop, files go
  EXPECT_NE(access(s->record().log_path.c_str(), F_OK), 0);
  EXPECT_NE(access(s->record().stats_path.c_str(), F_OK), 0);
}

TEST(Shaper, BothDirectionsOnOneGateway) {
  Line l("both");
  netem::LinkParams to_b, to_a;
  to_b.delay_us = 10000;
  to_a.delay_us = 5000;
  auto sb = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "a->b"}, to_b);
  auto sa = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToA, "b->a"}, to_a);
  EXPECT_NE(sb->record().queue_num, sa->record().queue_num);
  auto pings = [&] { return ping(l.a, l.b_ip, 20, 0.02, 5).rtt_ms; };
  const RoundTrips shaped(pings());
  const RoundTrips base = zero_delay_base({{sb->record(), to_b}, {sa->record(), to_a}}, pings);
  EXPECT_TRUE(within("A->B least", shaped.min(), least_bounds({10, 5}, base)));
}

// Loss models on the wire (beyond the fidelity tests' random loss): 20000 probes through GW.
struct Burst {
  double loss = 0, loss_after_loss = 0;
};
Burst measure_loss_model(const netem::LossModel& m) {
  Line l("ge");
  netem::LinkParams p;
  p.loss = m;
  auto s = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "t"}, p, seeded());
  PingResult r = udp_probe(l.a, l.b, l.b_ip, 20000, 0.0002, 0.5);
  int lost = 0, pairs = 0;
  for (size_t i = 0; i < r.replied.size(); ++i) {
    lost += !r.replied[i];
    pairs += i && !r.replied[i] && !r.replied[i - 1];
  }
  return {double(lost) / r.replied.size(), double(pairs) / std::max(lost, 1)};
}

TEST(Shaper, GilbertLossOnTheWire) {
  netem::LossModel m;
  m.kind = netem::LossModel::Kind::kGilbertElliott;
  m.p_pct = 2;
  m.r_pct = 20;  // h 0, k 100: lose iff bad; bad 1/11 of the time, bursts of 5 on average
  Burst b = measure_loss_model(m);
  double mean = 2.0 / 22, rho = 1 - 0.02 - 0.20;
  double sigma = std::sqrt(mean * (1 - mean) / 20000 * (1 + rho) / (1 - rho));
  std::printf(
      "gemodel p 2%% r 20%%: loss %.3f%% (expected %.3f%% +- %.3f), P(loss|loss) %.3f "
      "(expected 0.80)\n",
      100 * b.loss, 100 * mean, 300 * sigma, b.loss_after_loss);
  EXPECT_NEAR(b.loss, mean, 3 * sigma);
  EXPECT_NEAR(b.loss_after_loss, 0.80, 0.03);
}

TEST(Shaper, CorrelatedRandomLossOnTheWire) {
  netem::LossModel m;
  m.kind = netem::LossModel::Kind::kRandom;
  m.p_pct = 5;
  m.correlation_pct = 50;
  Burst b = measure_loss_model(m);
  double rho = 0.5, sigma = std::sqrt(0.05 * 0.95 / 20000 * (1 + rho) / (1 - rho));
  std::printf("loss 5%% 50%%: loss %.3f%% (+- %.3f), P(loss|loss) %.3f (expected 0.525)\n",
              100 * b.loss, 300 * sigma, b.loss_after_loss);
  EXPECT_NEAR(b.loss, 0.05, 3 * sigma);
  EXPECT_NEAR(b.loss_after_loss, 0.525, 0.05);
}

// Both directions shaped, as xdc shapes a WAN link (20 ms one way each): RTT 40 ms (its
// least held to the delays, this machine's base round trip on the line and the delay
// lines' own lateness in the same probe, tests/common/round_trip.h), and a single TCP flow
// fills the link: at least 90% of the payload the link carries (1448-byte segments in
// 1514-byte frames), less the link's time a stall of the machine took. 400 Mbit/s, not two-dc's 1
// Gbit/s: what is asserted is the shaping, and two delay lines relaying a gigabit take both cores
// of a 2-core machine, so another process's load would move the figure (xdc check and the
// benchmarks measure the ceiling).
TEST(Shaper, SymmetricLinkCarriesTcpAtRate) {
  Line l("sym");
  big_tcp_buffers(l.a);
  big_tcp_buffers(l.b);
  netem::LinkParams p;
  p.delay_us = 20'000;
  p.rate_bps = 400'000'000;
  auto to_b = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "a->b"}, p);
  auto to_a = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToA, "b->a"}, p);
  auto probes = [&] { return udp_probe(l.a, l.b, l.b_ip, 20, 0.01, 0.5).rtt_ms; };
  const std::vector<ShapedDirection> dirs{{to_b->record(), p}, {to_a->record(), p}};
  const ProbedRoundTrips shaped = probe_with_lateness(dirs, probes);
  const RoundTrips base = zero_delay_base(dirs, probes);
  xdc::testing::StallMeter stalls(netem::ShapeOptions{}.rt_prio);  // what a stall took
  IperfResult r = iperf_tcp(l.a, l.b, l.b_ip, 5, 2);
  const double stalled = stalls.stop();
  std::printf(
      "symmetric 20 ms + 20 ms, %.0f Mbit/s: TCP goodput %.1f Mbit/s, %ld retransmits; the "
      "machine stalled %.1f%% of the time\n",
      p.rate_bps / 1e6, r.goodput_bps / 1e6, r.retransmits, 100 * stalled);
  EXPECT_TRUE(within("A->B least", shaped.rtt.min(), least_bounds({20, 20}, base, shaped.late_ms)));
  EXPECT_GE(r.goodput_bps, 0.9 * p.rate_bps * 1448 / 1514 * (1 - stalled)) << r.error;
  EXPECT_LE(r.goodput_bps, 1.01 * p.rate_bps);
}

// The rate stage counts what the segments carry on a wire (netem::ShapeCounters::sent_bytes,
// the runs' WAN bytes): TCP hands the veth GSO aggregates of up to 64 KB, and the qdisc
// charges each aggregate every segment's headers (qdisc_pkt_len), so the bytes sent for a
// bulk flow are its payload x 1514 / 1448 (Ethernet 14, IPv4 20, TCP with timestamps 32 a
// 1448-byte segment), where the interface's own counter sees one header per aggregate.
TEST(Shaper, TheRateStageCountsEverySegmentsHeaders) {
  Line l("wirebytes");
  netem::LinkParams p;
  p.delay_us = 5'000;
  p.rate_bps = 200'000'000;
  auto s = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "a->b"}, p);
  const uint64_t before = netem::shape_counters(s->record()).sent_bytes;
  IperfResult r = iperf_tcp(l.a, l.b, l.b_ip, 3, 0);
  const double sent = static_cast<double>(netem::shape_counters(s->record()).sent_bytes - before);
  ASSERT_GT(r.received_bytes, 0) << r.error;
  std::printf(
      "200 Mbit/s: %.0f payload bytes received, %.0f bytes sent by the rate stage "
      "(%.4f; 1514 / 1448 = %.4f), %ld retransmits\n",
      r.received_bytes, sent, sent / r.received_bytes, 1514.0 / 1448, r.retransmits);
  // Above it: each retransmitted segment again, and the iperf3 control connection.
  EXPECT_GE(sent / r.received_bytes, 1514.0 / 1448 * 0.995);
  EXPECT_LE(sent,
            (r.received_bytes + 1448.0 * static_cast<double>(r.retransmits)) * 1514 / 1448 * 1.005);
}

TEST(Shaper, UserspaceDuplicatesOnTheWire) {
  Line l("dup");
  netem::LinkParams p;
  p.delay_us = 2000;
  p.duplicate_pct = 10;
  auto s = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "t"}, p, seeded());
  const int n = 10000;
  PingResult r = udp_probe(l.a, l.b, l.b_ip, n, 0.0002, 0.5);
  double sigma = std::sqrt(0.1 * 0.9 / n);
  std::printf("duplicate 10%%: %d duplicate replies of %d probes (%.3f%%), %d lost\n", r.duplicates,
              n, 100.0 * r.duplicates / n, r.sent - r.received);
  EXPECT_NEAR(double(r.duplicates) / n, 0.10, 3 * sigma) << netem::delayline_stats(s->record());
  EXPECT_EQ(r.received, n);
  // Copies are delayed like originals: every reply took about the delay at least (the
  // delay line wakes early by its learnt wake-up latency, so a packet may leave a few
  // tens of microseconds before its time).
  EXPECT_GE(*std::min_element(r.rtt_ms.begin(), r.rtt_ms.end()), 1.8);
}

TEST(Shaper, UserspaceCorruptsOnTheWire) {
  // A flipped bit fails the IP or UDP checksum at B: corrupted probes are lost there.
  Line l("corr");
  netem::LinkParams p;
  p.delay_us = 1000;
  p.corrupt_pct = 10;
  auto s = netem::shape_egress(Backend::kUserspace, {l.gw, Line::kGwToB, "t"}, p, seeded());
  const int n = 10000;
  PingResult r = udp_probe(l.a, l.b, l.b_ip, n, 0.0002, 0.5);
  nlohmann::json st = netem::delayline_stats(s->record());
  double lost = double(r.sent - r.received) / n, sigma = std::sqrt(0.1 * 0.9 / n);
  std::printf("corrupt 10%%: %.3f%% of probes lost at B, delay line corrupted %s\n", 100 * lost,
              st["corrupted"].dump().c_str());
  EXPECT_NEAR(lost, 0.10, 3 * sigma) << st;
  EXPECT_EQ(st["corrupted"].get<int>(), r.sent - r.received) << st;
  EXPECT_EQ(r.duplicates, 0);
}

TEST(Shaper, MissingInterfaceIsNamed) {
  Line l("noif");
  netem::LinkParams p;
  p.delay_us = 1000;
  try {
    netem::shape_egress(Backend::kUserspace, {l.gw, "nosuch0", "east->west"}, p);
    FAIL();
  } catch (const std::exception& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("east->west"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nosuch0"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace xdc::testbed
