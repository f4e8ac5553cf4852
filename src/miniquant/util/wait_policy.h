// How OpenMP's idle threads wait, chosen by the machine's load when a timing study starts.
//
// libgomp's default lets a thread that reaches a barrier spin before it sleeps. On a quiet machine that
// is what makes a decode step's many short parallel regions fast (measured on the 2-vCPU Zen 4 VM:
// fp32 MiniGPT decode 2.1 mJ/token spinning, 11.7 sleeping). With one competing CPU-bound process per
// core it is the opposite: a spinning thread burns its time slice while its partner waits to be
// scheduled, and each barrier costs a slice (2.1 -> 6.0 mJ/token with a +-50% spread between rounds;
// sleeping, 3.7 with +-3%). libgomp reads OMP_WAIT_POLICY once, when it is loaded, so the choice is
// made before: a timing command that finds other runnable threads at its start sets
// OMP_WAIT_POLICY=passive and re-executes itself. A policy the user set is never overridden.
#pragma once
#include <string>
#include <string_view>

namespace mq {

// The running-entities count of a /proc/loadavg line ("0.52 0.41 0.30 2/81 12345" -> 2), -1 when the
// line is not of that form.
int parse_running_entities(std::string_view loadavg);

// Runnable threads other than the caller, as the median of `samples` reads of /proc/loadavg's
// running-entities field `spacing_ms` apart (-1 when unreadable). The caller counts itself once.
int other_runnable_threads(int samples = 15, int spacing_ms = 10);

// Sets OMP_WAIT_POLICY=passive and re-executes /proc/self/exe with `argv` when the user has not set
// OMP_WAIT_POLICY and other_runnable_threads() >= 1; records the choice in MQ_OMP_WAIT_CHOICE either
// way. Call first in main, before any OpenMP region. Returns only when no re-execution happened (or it
// failed: then the default policy stays, and wait_policy_json says so).
void settle_wait_policy(char** argv);

// What a manifest records: {"policy": "passive" | "active" | "default (spin, then sleep)", "chosen_by": ...}.
struct WaitPolicy {
  std::string policy, chosen_by;
};
WaitPolicy wait_policy();

}  // namespace mq
