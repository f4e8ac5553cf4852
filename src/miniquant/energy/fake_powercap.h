// A fake powercap tree for the RAPL reader's tests and lab 04's grader (no VM of ours has real counters):
// the one layout both check against, so the library's test and the learner's grader cannot drift apart.
//
// Under `root`:
//   intel-rapl/          the control type's folder (an `enabled` file): not a zone
//   intel-rapl:0         package-0, counter 1,900,000 uJ, range 2,000,000 (in the total)
//   intel-rapl:0:0       core,      counter   500,000 uJ, range 2,000,000 (inside package-0)
//   intel-rapl:0:1       dram,      counter   300,000 uJ, range 1,000,000 (in the total)
//   intel-rapl:1         package-1, energy_uj is a folder: unreadable, skipped
//   intel-rapl:2         package-2, max_energy_range_uj "lots": skipped
//   intel-rapl:3         package-3, energy_uj empty: skipped
//   intel-rapl:4         psys,      counter        10 uJ, range 100,000,000 (recorded, never in the total)
#pragma once
#include <string>

namespace mq::energy {

// Writes the tree above under `root` (created; files already there are overwritten). mq::Error naming the
// file when one cannot be written.
void write_fake_powercap(const std::string& root);

}  // namespace mq::energy
