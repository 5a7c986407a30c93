#!/usr/bin/env bash
# `inflight bench offline --workload overhead --step-feed`: each row runs without and
# with one reader of the step feed; the reader must have received and encoded events
# (bytes per step > 0) exactly in the "on" rows. Usage: offline_step_feed.sh INFLIGHT PLUGIN_DIR
set -u
inflight=${1:?inflight binary}
plugins=${2:?plugin dir}

out=$(INFLIGHT_PLUGIN_DIR="$plugins" "$inflight" bench offline --workload overhead --policy fcfs \
  --num-prompts 4 --step-feed --set engine.threads=1 2> /dev/null) || { echo "FAIL: bench offline exited $?"; exit 1; }
echo "$out"
# Columns: policy seqs feed steps step_ms backend_ms outside_ms outside% feed_bytes_per_step
echo "$out" | awk '
  $1 == "fcfs" && $3 == "off" { ++off; if ($9 != 0) bad = bad "feed off but " $9 " bytes/step; " }
  $1 == "fcfs" && $3 == "on"  { ++on;  if ($9 <= 100) bad = bad "feed on but only " $9 " bytes/step; " }
  END {
    if (off != 2 || on != 2) { print "FAIL: expected 2 rows off and 2 on, got " off " and " on; exit 1 }
    if (bad != "") { print "FAIL: " bad; exit 1 }
    print "ok: the step feed was read in the on rows only"
  }'
