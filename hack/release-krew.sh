#!/usr/bin/env bash
# Packages the plugin for krew and writes the manifest to submit to krew-index.
#
#   hack/release-krew.sh package [BINARY OS ARCH]  # target/krew/kubectl-kueue_ext-OS-ARCH.tar.gz
#   hack/release-krew.sh manifest REPO_URL         # target/krew/kueue-ext.yaml
#
# Linux only, amd64 and arm64: the kind runtime loads the plugin's own binary into Linux kind
# nodes as the controller, which a darwin (Mach-O) binary cannot be, so `package` refuses darwin.
#
# `package` without arguments builds this machine's release binary: on linux/amd64 the static
# one of hack/build-static.sh, which runs on any distribution. The linux/arm64 archive is built
# on an arm64 Linux machine (or in CI) with `package` or `package BINARY linux arm64`, and
# copied into target/krew/ under the same name.
#
# `manifest` fills plugins/kueue-ext.yaml: ${REPO_URL} (e.g. https://github.com/OWNER/kueue-ext,
# for the homepage and the release downloads) and each ${SHA256_<OS>_<ARCH>} with the sha256 of
# that platform's archive. It refuses while an archive is missing, as krew rejects a manifest
# with a placeholder left. Try the result before submitting it:
#   kubectl krew install --manifest=target/krew/kueue-ext.yaml \
#     --archive=target/krew/kubectl-kueue_ext-linux-amd64.tar.gz
# ($KREW_OUT moves target/krew/.)
set -euo pipefail
cd "$(dirname "$0")/.."

out=${KREW_OUT:-target/krew}
template=plugins/kueue-ext.yaml
version=v$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)

die() {
  echo "error: $*" >&2
  exit 1
}

sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d ' ' -f 1
}

# The platforms plugins/kueue-ext.yaml lists; anything else gets no archive.
check_platform() {
  case "$1/$2" in
    linux/amd64 | linux/arm64) ;;
    darwin/*) die "no krew archive for $1/$2: the kind runtime loads the plugin's own binary into Linux kind nodes, which a darwin binary cannot be (Linux only: linux/amd64, linux/arm64)" ;;
    *) die "no krew archive for $1/$2: the manifest lists linux/amd64 and linux/arm64 only" ;;
  esac
}

host_platform() {
  local os arch
  os=$(uname -s | tr '[:upper:]' '[:lower:]')
  case "$(uname -m)" in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "no krew platform for $(uname -m)" ;;
  esac
  echo "$os $arch"
}

package() {
  local bin=$1 os=$2 arch=$3
  check_platform "$os" "$arch"
  [ -x "$bin" ] || die "$bin is not an executable"
  # krew-index takes no plugin without its license in the archive.
  [ -f LICENSE ] || die "no LICENSE at the repository root: add the license text (Cargo.toml says Apache-2.0) before packaging"
  local archive
  # Global, and removed on EXIT: a RETURN trap set here would outlive this function and fire
  # again when package_host returns, with a local $stage gone (set -u fails the run there).
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  cp "$bin" "$stage/kubectl-kueue_ext"
  cp LICENSE "$stage/LICENSE"
  # Modes of their own, not whatever the umask left: krew runs the binary as archived.
  chmod 0755 "$stage/kubectl-kueue_ext"
  chmod 0644 "$stage/LICENSE"
  mkdir -p "$out"
  archive="$out/kubectl-kueue_ext-$os-$arch.tar.gz"
  tar -C "$stage" -cf - kubectl-kueue_ext LICENSE | gzip -n >"$archive"
  echo "$archive"
}

package_host() {
  local os arch bin platform
  # Its own assignment, so that set -e stops here when host_platform dies.
  platform=$(host_platform)
  read -r os arch <<<"$platform"
  # Before a build of minutes, not after it.
  check_platform "$os" "$arch"
  if [ "$os/$arch" = linux/amd64 ]; then
    bin=$(hack/build-static.sh | tail -n 1)
  else
    cargo build --locked --profile dist --bin kubectl-kueue_ext >&2
    bin="${CARGO_TARGET_DIR:-target}/dist/kubectl-kueue_ext"
  fi
  package "$bin" "$os" "$arch"
}

# The '${...}' in single quotes are the template's placeholders, meant literally; a token has no
# space in it, so the word-splitting loop over them is safe.
# shellcheck disable=SC2016,SC2013
manifest() {
  local repo_url=${1%/}
  case "$repo_url" in
    https://*) ;;
    *) die "REPO_URL must be an https:// address, got '$repo_url'" ;;
  esac
  grep -q "^  version: $version\$" "$template" || die "spec.version in $template is not $version, the version in Cargo.toml"
  local filled token platform os arch archive
  local missing=()
  # The header comment describes the template, not the filled copy.
  filled=$(sed '/^apiVersion:/,$!d' "$template")
  filled=${filled//'${REPO_URL}'/$repo_url}
  for token in $(grep -o '\${SHA256_[A-Z0-9]*_[A-Z0-9]*}' "$template" | sort -u); do
    platform=${token#'${SHA256_'}
    platform=${platform%'}'}
    os=$(echo "${platform%%_*}" | tr '[:upper:]' '[:lower:]')
    arch=$(echo "${platform#*_}" | tr '[:upper:]' '[:lower:]')
    archive="$out/kubectl-kueue_ext-$os-$arch.tar.gz"
    if [ -f "$archive" ]; then
      filled=${filled//"$token"/$(sha256 "$archive")}
    else
      missing+=("$archive")
    fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    die "no archive for $(printf '%s ' "${missing[@]}")(build each with \`$0 package\` on its platform)"
  fi
  mkdir -p "$out"
  printf '%s\n' "$filled" >"$out/kueue-ext.yaml"
  echo "$out/kueue-ext.yaml"
}

case "${1:-}" in
  package)
    shift
    case $# in
      0) package_host ;;
      3) package "$@" ;;
      *) die "usage: $0 package [BINARY OS ARCH]" ;;
    esac
    ;;
  manifest)
    [ $# -eq 2 ] || die "usage: $0 manifest REPO_URL"
    manifest "$2"
    ;;
  *) die "usage: $0 package [BINARY OS ARCH] | manifest REPO_URL" ;;
esac
