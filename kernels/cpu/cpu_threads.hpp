#pragma once
/// Compute threads sized to the physical cores and pinned to them.

#include <vector>

namespace inflight::kernels::cpu {

/// The CPUs this process may run on, one per physical core (the lowest-numbered
/// hardware thread of each core); all allowed CPUs when the topology is unknown.
std::vector<int> physical_core_cpus();

/// Pins each thread of an OpenMP team of `num_threads` started from the calling thread,
/// the caller included, to one of `cpus` (thread i to cpus[i % size]). Threads created
/// later by a pinned thread inherit its CPU, so call it from a thread that creates no
/// others (the executor's). Returns false when the OS refused.
bool pin_team(int num_threads, const std::vector<int>& cpus);

}  // namespace inflight::kernels::cpu
