#!/usr/bin/env bash
# Installs inflight's build and test dependencies from Debian's packages.
# Idempotent: packages already present are left alone.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libcaf-dev            # actors (CAF 0.17; libcaf-openssl: mutual TLS on the engine port)
  libssl-dev            # HTTPS / WSS at the edge, API key digests
  libcurl4-openssl-dev  # Hugging Face Hub downloads (hub/)
  openssl               # the TLS tests make throwaway certificates with it
  libboost-dev          # Beast / Asio (header-only)
  libtomlplusplus-dev   # deployment TOML
  catch2                # tests (Catch2 v2)
  libopenblas-dev       # CPU GEMMs
  libcli11-dev          # command line
  nlohmann-json3-dev    # JSON
  libspdlog-dev libfmt-dev
  libpcre2-dev          # tokenizer.json pre-tokenization
  libxxhash-dev         # prefix-cache block hashes (XXH3-128)
  curl                  # SSE test script
  python3               # scripts/layers.py (the folders' layering test), test helpers
  python3-jinja2        # tests/peers/jinja2_oracle.py: chat templates rendered as transformers does
  gnuplot-nox           # inflight bench serve --plot
  clang-16 libclang-rt-16-dev  # libFuzzer harnesses (tests/fuzz; clang-14 lacks std::expected)
  llvm-16               # llvm-symbolizer for readable sanitizer reports
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
