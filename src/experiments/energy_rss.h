// Peak resident memory of this process, resettable so each method gets its own peak (Linux:
// writing "5" to /proc/self/clear_refs resets VmHWM, since Linux 4.0).
#pragma once

namespace mqexp {

void reset_peak_rss();    // best effort: where it cannot reset, peaks carry over from earlier methods
double peak_rss_bytes();  // VmHWM of /proc/self/status, 0 when unreadable

}  // namespace mqexp
