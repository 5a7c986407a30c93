#!/usr/bin/env bash
# scripts/layers.py on this repository (every folder layered: no include cycle at any
# level, no top-level folder including one it may not), and on small trees that break
# each rule, which it must refuse.
set -euo pipefail
layers="$(cd "$(dirname "$0")/../.." && pwd)/scripts/layers.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 "$layers" --check > "$work/repo.txt" 2>&1 || { cat "$work/repo.txt"; echo "FAIL: the repository has a cycle or a forbidden include"; exit 1; }

# expect_refused NAME MESSAGE: the tree under $work/NAME fails the check, saying MESSAGE.
expect_refused() {
  if python3 "$layers" --check --root "$work/$1" > "$work/$1.txt" 2>&1; then
    cat "$work/$1.txt"; echo "FAIL: $1 passed the check"; exit 1
  fi
  grep -qF "$2" "$work/$1.txt" || { cat "$work/$1.txt"; echo "FAIL: $1: no '$2'"; exit 1; }
}

# Two folders of core/ that include each other (through a header and a source).
mkdir -p "$work/folders/core/a" "$work/folders/core/b"
printf '#include "core/b/y.hpp"\n' > "$work/folders/core/a/x.hpp"
printf '#pragma once\n' > "$work/folders/core/b/y.hpp"
printf '#include "core/b/y.hpp"\n#include "core/a/x.hpp"\n' > "$work/folders/core/b/y.cpp"
expect_refused folders "cycle in core/: a/ <-> b/"

# Two files of one folder: a header and a source count as one node.
mkdir -p "$work/files/actors/engine"
printf '#include "actors/engine/messages.hpp"\n' > "$work/files/actors/engine/engine.cpp"
printf '#pragma once\n' > "$work/files/actors/engine/engine.hpp"
printf '#pragma once\n#include "actors/engine/engine.hpp"\n' > "$work/files/actors/engine/messages.hpp"
expect_refused files "cycle in actors/engine/: engine <-> messages"

# core/ may include nothing above it.
mkdir -p "$work/upward/core/engine" "$work/upward/actors"
printf '#pragma once\n' > "$work/upward/actors/engine_api.hpp"
printf '#include "actors/engine_api.hpp"\n' > "$work/upward/core/engine/step.cpp"
expect_refused upward "core/ may not include actors/"

# The same tree without the upward include passes.
printf '#pragma once\n' > "$work/upward/core/engine/step.cpp"
python3 "$layers" --check --root "$work/upward" > /dev/null 2>&1 || { echo "FAIL: a layered tree was refused"; exit 1; }
echo "layers: the repository is layered; cycles of folders and of files and an upward include are refused"
