#!/usr/bin/env python3
"""The Routing table of docs/benchmarks.md from bench/route-matrix.sh's result files:
one row per (workload, engines, policy), with each engine's prefill tokens (exact, from
the engines' own counters) and the timings (noisy on a shared machine).

    bench/route-table.py OUT_DIR
"""
import glob
import json
import os
import sys


def rows(out_dir):
    for path in sorted(glob.glob(os.path.join(out_dir, "*.json"))):
        tag = os.path.basename(path)[:-5]
        workload, n, policy = tag.rsplit("-", 2) if tag.count("-") >= 2 else (tag, "?", "?")
        run = json.load(open(path))["runs"][0]
        s, engines = run["summary"], run["engines"]
        prefill = [e["prefill_tokens"] for e in engines]
        yield (workload, int(n), policy, s["prefix_cache_hit_rate"], s["ttft_ms"]["p50"], s["ttft_ms"]["p99"],
               s["request_throughput"], s["output_throughput"], prefill)


def main():
    out_dir = sys.argv[1]
    print("| workload | engines | policy | hit rate | TTFT p50 (ms) | TTFT p99 (ms) | req/s | out tok/s "
          "| prefill tokens, each engine | prefill tokens, all |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    order = {"round_robin": 0, "least_load": 1, "prefix": 2}
    for r in sorted(rows(out_dir), key=lambda r: (r[0], r[1], order.get(r[2].split("+")[0], 3), r[2])):
        workload, n, policy, hit, p50, p99, rps, tps, prefill = r
        print(f"| {workload} | {n} | {policy} | {100 * hit:.1f}% | {p50:.0f} | {p99:.0f} | {rps:.2f} | {tps:.1f} "
              f"| {' / '.join(map(str, prefill))} | {sum(prefill)} |")


if __name__ == "__main__":
    main()
