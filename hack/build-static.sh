#!/usr/bin/env bash
# Builds the statically linked plugin (the dist profile: LTO) for release archives, and proves
# it stands alone: it asks for no ELF interpreter, names no shared library, and runs
# `--version` with nothing around it. Prints the binary's path last.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
rustup target list --installed | grep -qx "$target" || rustup target add "$target" >&2
# ring compiles C for the target: with a musl cross compiler, or Debian's musl-gcc wrapper.
if ! command -v x86_64-linux-musl-gcc >/dev/null; then
  command -v musl-gcc >/dev/null \
    || apt-get install -y musl-tools >&2 \
    || { apt-get update >&2 && apt-get install -y musl-tools >&2; } \
    || { echo "no musl C compiler: install musl-tools (apt-get install musl-tools)" >&2; exit 1; }
  export CC_x86_64_unknown_linux_musl=musl-gcc
fi
cargo build --locked --profile dist --target "$target" --bin kubectl-kueue_ext >&2
bin="${CARGO_TARGET_DIR:-target}/$target/dist/kubectl-kueue_ext"

if readelf --program-headers "$bin" | grep -q 'program interpreter'; then
  echo "$bin asks for a dynamic loader" >&2
  exit 1
fi
if readelf --dynamic "$bin" | grep -q '(NEEDED)'; then
  echo "$bin needs shared libraries" >&2
  exit 1
fi
# What a scratch image gives it: an empty root and an empty environment.
if [ "$(id -u)" = 0 ] && command -v chroot >/dev/null; then
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  cp "$bin" "$root/kubectl-kueue_ext"
  env -i "$(command -v chroot)" "$root" /kubectl-kueue_ext --version >&2
else
  env -i "$bin" --version >&2
fi
echo "$bin"
