#!/usr/bin/env bash
# The GPU check in one command.
#   scripts/gpu_check.sh prepare BUILD   (here) pack BUILD/gpu-check: the binaries the check
#                                        runs, every non-glibc library they load (ldd), UCX's
#                                        transport modules, and this script
#   BUILD/gpu-check/gpu_check.sh run [OUT_DIR]
#                                        (on the GPU machine, no network, no apt) run the CUDA
#                                        tests, the gather-kernel bandwidth case and a loader run
#                                        with CUDA output through the data plane; write
#                                        OUT_DIR/gpu-check.json (default: ./gpu-check-out)
# ./run gpu-check builds, prepares, and runs it where a GPU is visible.
set -euo pipefail

prepare() {
  local build="$1" pack="$1/gpu-check"
  local bins=("$build/bin/fanout-gpu-check" "$build/bin/fanout-server" "$build/bin/fanout-partition"
              "$build/tests/cache_cuda_test" "$build/tests/dataplane_test")
  for b in "${bins[@]}"; do
    [ -x "$b" ] || { echo "gpu-check: $b was not built" >&2; exit 1; }
  done
  rm -rf "$pack"
  mkdir -p "$pack/bin" "$pack/lib"
  cp "${bins[@]}" "$pack/bin/"
  cp "$0" "$pack/gpu_check.sh"
  # Libraries: everything ldd resolves except glibc's own (the GPU machine has
  # glibc >= 2.36) and the CUDA driver (the machine's own).
  local skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libcuda\.so)'
  ldd "${bins[@]}" 2>/dev/null | awk '/=> \//{print $1" "$3}' | sort -u | while read -r name path; do
    [[ "$name" =~ $skip ]] && continue
    cp -L "$path" "$pack/lib/$name"
  done
  # UCX loads its transports (tcp, shared memory, verbs, cuda) as modules.
  local ucx_mod=/usr/lib/x86_64-linux-gnu/ucx
  if [ -d "$ucx_mod" ]; then
    mkdir -p "$pack/lib/ucx"
    cp -L "$ucx_mod"/*.so* "$pack/lib/ucx/" 2>/dev/null || true
    ldd "$ucx_mod"/*.so 2>/dev/null | awk '/=> \//{print $1" "$3}' | sort -u | while read -r name path; do
      [[ "$name" =~ $skip ]] && continue
      [ -e "$pack/lib/$name" ] || cp -L "$path" "$pack/lib/$name"
    done
  fi
  echo "gpu-check: packed $(du -sh "$pack" | cut -f1) into $pack"
}

run() {
  local here out
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  out="${1:-$PWD/gpu-check-out}"
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [ -d "$here/lib/ucx" ] && export UCX_MODULE_DIR="$here/lib/ucx"
  export UCX_NET_DEVICES="${UCX_NET_DEVICES:-lo}"
  # The tests read datasets/ from the source tree: the repository this runs in.
  export FANOUT_SOURCE_DIR="${FANOUT_SOURCE_DIR:-$(cd "$here/../.." && pwd)}"
  local start=$SECONDS status=0
  echo "== device"; nvidia-smi -L 2>&1 | tee "$out/nvidia-smi.txt" || true
  echo "== CUDA tests"
  timeout 120 "$here/bin/cache_cuda_test" --gtest_output="json:$out/cache_cuda_test.json" || status=1
  echo "== data-plane tests (CUDA destinations; the rest as on any machine)"
  timeout 240 "$here/bin/dataplane_test" --gtest_filter='*Cuda*:*RepliesEqualThrift*' \
    --gtest_output="json:$out/dataplane_test.json" || status=1
  echo "== gather kernel and loader with CUDA output"
  timeout 240 "$here/bin/fanout-gpu-check" --scale 18 --seconds 10 --json "$out/fanout-gpu-check.json" || status=1
  # One JSON file with everything.
  python3 - "$out" "$status" "$((SECONDS - start))" <<'PY' || true
import json, os, sys
out, status, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
doc = {"status": "pass" if status == 0 else "fail", "seconds": secs}
for name in ("cache_cuda_test", "dataplane_test", "fanout-gpu-check"):
    p = os.path.join(out, name + ".json")
    if os.path.exists(p):
        with open(p) as f:
            doc[name] = json.load(f)
p = os.path.join(out, "nvidia-smi.txt")
if os.path.exists(p):
    doc["device"] = open(p).read().strip()
with open(os.path.join(out, "gpu-check.json"), "w") as f:
    json.dump(doc, f, indent=1)
print("gpu-check: wrote", os.path.join(out, "gpu-check.json"), "status", doc["status"], "in", secs, "s")
PY
  return $status
}

case "${1:-}" in
  prepare) prepare "${2:?usage: gpu_check.sh prepare BUILD_DIR}" ;;
  run) shift; run "$@" ;;
  *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
