#!/usr/bin/env python3
"""Validates `inflight simulate --cost-model profile:FILE` against the real engine.

Runs one workload through `inflight bench offline` (the engine in-process, every policy)
and through `inflight simulate` with the same deployment, requests, arrival times and
settings, then prints, per policy, each figure of both and the simulator's relative error
as a Markdown table (docs/simulate.md, "Validation").

  bench/sim_validate.py --inflight build/bin/inflight --shape bench-20M \
      --profile profiles/cpu-bench-20M.json --workload variance --num-prompts 48

Take timings under /work/figs/quiet.sh (or any quiet machine); each call is one workload.
"""
import argparse
import json
import os
import subprocess
import sys

FIGURES = [  # (label, summary key, statistic)
    ("out tok/s", "output_throughput", None),
    ("TTFT p50", "ttft_ms", "p50"),
    ("TTFT p99", "ttft_ms", "p99"),
    ("TPOT p50", "tpot_ms", "p50"),
    ("TPOT p99", "tpot_ms", "p99"),
    ("ITL p50", "itl_ms", "p50"),
    ("ITL p99", "itl_ms", "p99"),
]


def run(cmd, log):
    print("+ " + " ".join(cmd), file=sys.stderr)
    with open(log, "w") as err:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    if done.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (done.returncode, " ".join(cmd), open(log).read()))
    return done.stdout


def figure(summary, key, stat):
    v = summary[key]
    return v if stat is None else v.get(stat, 0.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inflight", default="build/bin/inflight")
    ap.add_argument("--config", default="config/bench-20M.toml")
    ap.add_argument("--shape", default="bench-20M")
    ap.add_argument("--profile", required=True, help="the step profile (inflight bench profile)")
    ap.add_argument("--workload", default="variance")
    ap.add_argument("--num-prompts", type=int, default=0)
    ap.add_argument("--request-rate", default="inf")
    ap.add_argument("--policy", default="all")
    ap.add_argument("--engine-overhead-ms", default=None, help="simulate: override the engine overhead per step")
    ap.add_argument("--set", action="append", default=[], help="deployment override for both runs (key=value)")
    ap.add_argument("--out", default="sim-validate", help="folder for the JSON files and logs")
    ap.add_argument("--skip-real", action="store_true", help="reuse the real run's JSON in --out")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tag = "%s-%s" % (a.shape, a.workload)
    real_json = os.path.join(a.out, tag + "-real.json")
    sim_json = os.path.join(a.out, tag + "-sim.json")
    common = ["--config", a.config, "--workload", a.workload, "--policy", a.policy]
    for s in a.set:
        common += ["--set", s]
    if a.num_prompts:
        common += ["--num-prompts", str(a.num_prompts)]
    if a.request_rate != "inf":
        common += ["--request-rate", a.request_rate]
    if not a.skip_real:
        run([a.inflight, "bench", "offline", "--shape", a.shape, "--result-json", real_json] + common,
            os.path.join(a.out, tag + "-real.log"))
    sim = [a.inflight, "simulate", "--shape", a.shape, "--cost-model", "profile:" + a.profile, "--json", sim_json]
    if a.engine_overhead_ms is not None:
        sim += ["--engine-overhead-ms", a.engine_overhead_ms]
    run(sim + common, os.path.join(a.out, tag + "-sim.log"))
    real = json.load(open(real_json))["policies"]
    simulated = {r["policy"]: r for r in json.load(open(sim_json))["runs"]}
    print("%s, %s workload (%s requests, rate %s): real / simulated (error)\n" %
          (a.shape, a.workload, a.num_prompts or "all", a.request_rate))
    print("| policy | " + " | ".join(f[0] for f in FIGURES) + " | steps |")
    print("|---" * (len(FIGURES) + 2) + "|")
    errors = []
    for policy, r in real.items():
        s = simulated.get(policy)
        if s is None:
            continue
        cells = []
        for label, key, stat in FIGURES:
            rv, sv = figure(r["summary"], key, stat), figure(s["summary"], key, stat)
            err = (sv - rv) / rv if rv else 0.0
            errors.append(abs(err))
            cells.append("%.4g / %.4g (%+.0f%%)" % (rv, sv, 100 * err))
        cells.append("%d / %d" % (r["num_steps"], s["num_steps"]))
        print("| %s | %s |" % (policy, " | ".join(cells)))
    if errors:
        within = sum(1 for e in errors if e <= 0.10)
        print("\n%d of %d figures within 10%%; median |error| %.1f%%, max %.1f%%" %
              (within, len(errors), 100 * sorted(errors)[len(errors) // 2], 100 * max(errors)))


if __name__ == "__main__":
    main()
