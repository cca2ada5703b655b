#!/usr/bin/env bash
# Installs the Debian packages dfworker builds and tests with. Idempotent; quiet when all present.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  libcli11-dev libtbb-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
  libsimdjson-dev nlohmann-json3-dev libopenblas-dev libdnnl-dev libutf8proc-dev libpcre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-yaml libvalijson-dev
  libavro-dev libisal-dev zlib1g-dev libssl-dev libsqlite3-dev
  libpython3.11-dev python3-jinja2 python3.11-venv python3-pip
  libtcmalloc-minimal4
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
