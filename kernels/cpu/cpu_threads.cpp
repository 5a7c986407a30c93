#include "kernels/cpu/cpu_threads.hpp"

#include <omp.h>
#include <sched.h>

#include <atomic>
#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace inflight::kernels::cpu {
namespace {

bool read_int(const std::string& path, int& value) {
  std::ifstream in(path);
  return bool(in >> value);
}

}  // namespace

std::vector<int> physical_core_cpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> all, cores;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return {0};
  std::set<std::pair<int, int>> seen;  // (package, core)
  bool is_known = true;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    all.push_back(cpu);
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    int package = 0, core = 0;
    if (!read_int(dir + "physical_package_id", package) || !read_int(dir + "core_id", core)) is_known = false;
    if (seen.insert({package, core}).second) cores.push_back(cpu);
  }
  return is_known && !cores.empty() ? cores : all;
}

bool pin_team(int num_threads, const std::vector<int>& cpus) {
  if (cpus.empty()) return false;
  std::atomic<bool> is_ok{true};
#pragma omp parallel num_threads(num_threads)
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[std::size_t(omp_get_thread_num()) % cpus.size()], &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) is_ok = false;
  }
  return is_ok;
}

}  // namespace inflight::kernels::cpu
