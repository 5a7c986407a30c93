#!/usr/bin/env python3
"""Validates `inflight simulate --cost-model profile:FILE` against the real engine.

Runs one workload through `inflight bench offline` (the engine in-process, every policy)
and through `inflight simulate` with the same deployment, requests, arrival times and
settings, then prints, per policy, each figure of both and the simulator's relative error
as a Markdown table (docs/simulate.md, "Validation").

  bench/sim_validate.py --inflight build/bin/inflight --shape bench-20M \
      --profile profiles/cpu-bench-20M.json --workload variance --num-prompts 48

Take timings under /work/figs/quiet.sh (or any quiet machine); each call is one workload.
With --real-runs N the real engine runs N times (the whole policy list each time): the
simulation is compared with the median of the N, and a second table gives the real runs'
own spread, (max - min) / median per figure: the machine's noise, the floor under any
comparison with it.

With --replay (no --profile) each policy runs alone in the engine with its steps
recorded (`bench offline --record-steps`), and the simulation of the same requests takes
those steps' own times, in order (`--cost-model replay:FILE`): what is left between the
two is the simulator's (its schedule and its clock), not a cost model's.
"""
import argparse
import json
import statistics
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
    ap.add_argument("--profile", help="the step profile (inflight bench profile)")
    ap.add_argument("--replay", action="store_true",
                    help="simulate each policy with its own real run's recorded steps instead of a profile")
    ap.add_argument("--workload", default="variance")
    ap.add_argument("--num-prompts", type=int, default=0)
    ap.add_argument("--size", default=None, help="the workload's size (small | full; default: bench offline's)")
    ap.add_argument("--request-rate", default="inf")
    ap.add_argument("--policy", default="all")
    ap.add_argument("--engine-overhead-ms", default=None, help="simulate: override the engine overhead per step")
    ap.add_argument("--set", action="append", default=[], help="deployment override for both runs (key=value)")
    ap.add_argument("--out", default="sim-validate", help="folder for the JSON files and logs")
    ap.add_argument("--skip-real", action="store_true", help="reuse the real runs' JSON in --out")
    ap.add_argument("--real-runs", type=int, default=1, help="real runs to take the median of (and their spread)")
    a = ap.parse_args()
    if bool(a.profile) == a.replay:
        sys.exit("give --profile FILE or --replay")
    if a.replay and a.policy == "all":
        a.policy = "static,fcfs,lpm,priority,splitfuse,orca,prefill_first,tgi,slo"
    os.makedirs(a.out, exist_ok=True)
    tag = "%s-%s" % (a.shape, a.workload)
    real_jsons = [os.path.join(a.out, tag + "-real%s.json" % ("" if i == 0 else "-%d" % (i + 1)))
                  for i in range(a.real_runs)]
    sim_json = os.path.join(a.out, tag + "-sim.json")
    common = ["--config", a.config, "--workload", a.workload, "--policy", a.policy]
    for s in a.set:
        common += ["--set", s]
    if a.num_prompts:
        common += ["--num-prompts", str(a.num_prompts)]
    if a.size:
        common += ["--size", a.size]
    if a.request_rate != "inf":
        common += ["--request-rate", a.request_rate]
    if a.replay:
        return replay(a, common, tag)
    if not a.skip_real:
        for real_json in real_jsons:
            run([a.inflight, "bench", "offline", "--shape", a.shape, "--result-json", real_json] + common,
                real_json[:-5] + ".log")
    sim = [a.inflight, "simulate", "--shape", a.shape, "--cost-model", "profile:" + a.profile, "--json", sim_json]
    if a.engine_overhead_ms is not None:
        sim += ["--engine-overhead-ms", a.engine_overhead_ms]
    run(sim + common, os.path.join(a.out, tag + "-sim.log"))
    reals = [json.load(open(f))["policies"] for f in real_jsons]
    simulated = {r["policy"]: r for r in json.load(open(sim_json))["runs"]}
    runs = "" if len(reals) == 1 else " (median of %d real runs)" % len(reals)
    print("%s, %s workload (%s requests, rate %s): real / simulated (error)%s\n" %
          (a.shape, a.workload, a.num_prompts or "all", a.request_rate, runs))
    compare(reals, simulated)


def replay(a, common, tag):
    """Each policy: one real run with its steps recorded, then its simulation on them."""
    real, simulated, counts = {}, {}, []
    for policy in a.policy.split(","):
        base = os.path.join(a.out, "%s-%s" % (tag, policy))
        one = [c if c != a.policy else policy for c in common]
        if not a.skip_real:
            run([a.inflight, "bench", "offline", "--shape", a.shape, "--result-json", base + "-real.json",
                 "--record-steps", base + "-steps.json"] + one, base + "-real.log")
        # What the recording does not hold: the cold engine's time before its first step
        # (the first tokens came that long after the first step's own time), and the
        # engine's time between steps (the rest of the run's duration, per step).
        r = json.load(open(base + "-real.json"))["policies"][policy]
        steps = json.load(open(base + "-steps.json"))["samples"]
        ok = [x for x in r["requests"] if x.get("ttft_s", 0) > 0]
        first_send = min(x["start_s"] for x in r["requests"])
        startup = max(0.0, min(x["start_s"] + x["ttft_s"] for x in ok) - first_send - steps[0]["seconds"])
        # The median gap from one step's end to the next one's start: the engine idles
        # between some (waiting for arrivals), the median is the busy engine's.
        gaps = [b["start_s"] - a["start_s"] - a["seconds"] for a, b in zip(steps, steps[1:])]
        gap = max(0.0, statistics.median(gaps)) if gaps else 0.0
        gap_ms, startup_ms = gap * 1e3, startup * 1e3
        run([a.inflight, "simulate", "--shape", a.shape, "--cost-model", "replay:" + base + "-steps.json",
             "--engine-overhead-ms", "%.6f" % gap_ms, "--first-step-delay-ms", "%.6f" % startup_ms,
             "--json", base + "-sim.json"] + one, base + "-sim.log")
        real.update(json.load(open(base + "-real.json"))["policies"])
        s = json.load(open(base + "-sim.json"))["runs"][0]
        simulated[policy] = s
        counts.append("%s %d/%d (%.1f ms, +%.3f ms)" % (policy, s["replay"]["replayed"], s["replay"]["recorded"],
                                                         startup_ms, gap_ms))
    print("%s, %s workload (%s requests, rate %s): real / simulated on the real run's own steps (error)\n" %
          (a.shape, a.workload, a.num_prompts or "all", a.request_rate))
    compare([real], simulated)
    print("\nSteps of the recorded shape / recorded (the time before the first step, + between steps): " +
          ", ".join(counts))


def compare(reals, simulated):
    print("| policy | " + " | ".join(f[0] for f in FIGURES) + " | steps |")
    print("|---" * (len(FIGURES) + 2) + "|")
    errors, spreads, spread_rows, loo = [], [], [], []
    for policy in reals[0]:
        s = simulated.get(policy)
        if s is None or any(policy not in r for r in reals):
            continue
        cells, spread_cells = [], []
        for label, key, stat in FIGURES:
            values = [figure(r[policy]["summary"], key, stat) for r in reals]
            rv, sv = statistics.median(values), figure(s["summary"], key, stat)
            err = (sv - rv) / rv if rv else 0.0
            errors.append(abs(err))
            cells.append("%.4g / %.4g (%+.0f%%)" % (rv, sv, 100 * err))
            # Each real run against the median of the others: how close one real run
            # comes, the yardstick for the simulator's error against the median.
            for i, v in enumerate(values[:] if len(values) > 1 else []):
                others = statistics.median(values[:i] + values[i + 1:])
                loo.append(abs(v - others) / others if others else 0.0)
            spread = (max(values) - min(values)) / rv if rv else 0.0
            spreads.append(spread)
            spread_cells.append("%.0f%%" % (100 * spread))
        steps = statistics.median(r[policy]["num_steps"] for r in reals)
        cells.append("%d / %d" % (steps, s["num_steps"]))
        print("| %s | %s |" % (policy, " | ".join(cells)))
        spread_rows.append("| %s | %s |" % (policy, " | ".join(spread_cells)))
    if errors:
        within = sum(1 for e in errors if e <= 0.10)
        print("\n%d of %d figures within 10%%; median |error| %.1f%%, max %.1f%%" %
              (within, len(errors), 100 * sorted(errors)[len(errors) // 2], 100 * max(errors)))
    if len(reals) > 1 and spreads:
        print("\nThe real runs' own spread, (max - min) / median:\n")
        print("| policy | " + " | ".join(f[0] for f in FIGURES) + " |")
        print("|---" * (len(FIGURES) + 1) + "|")
        for row in spread_rows:
            print(row)
        within = sum(1 for e in spreads if e <= 0.10)
        print("\n%d of %d figures spread 10%% or less across the real runs; median spread %.1f%%, max %.1f%%" %
              (within, len(spreads), 100 * sorted(spreads)[len(spreads) // 2], 100 * max(spreads)))
        within = sum(1 for e in loo if e <= 0.10)
        print("Each real run against the median of the others: %d of %d figures within 10%%; median |difference| "
              "%.1f%%, max %.1f%%" % (within, len(loo), 100 * sorted(loo)[len(loo) // 2], 100 * max(loo)))


if __name__ == "__main__":
    main()
