"""Mock vLLM pools for the gateway tests: small OpenAI-compatible HTTP servers on loopback.

Each server plays one pool: it counts the prompt's tokens with the tokenizer it is given (the
model's, as far as the test is concerned), refuses a request that does not fit its context as
vLLM does (HTTP 400, "This model's maximum context length is …"), answers with ``usage`` and
records what it received. A message containing ``MOCK-FAIL-500`` gets an HTTP 500 and one
containing ``MOCK-SLOW`` an answer after :data:`SLOW_S` seconds (a backend timeout).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLOW_S = 3.0


def prompt_texts(body: dict) -> list[str]:
    """The text of a chat request's messages (text parts only)."""
    texts = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return texts


class MockPool:
    """One pool's mock server (``start`` / ``stop``); ``requests`` holds what it served."""

    def __init__(
        self, name: str, context_tokens: int, count_tokens: Callable[[str], int], per_message: int = 0
    ):
        self.name = name
        self.context_tokens = context_tokens
        self.count_tokens = count_tokens
        self.per_message = per_message
        self.requests: list[dict] = []
        self.refused: list[dict] = []
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def prompt_tokens(self, body: dict) -> int:
        messages = body.get("messages") or []
        return sum(self.count_tokens(t) for t in prompt_texts(body)) + self.per_message * len(messages)

    def start(self, port: int = 0) -> MockPool:
        """Serve on loopback at ``port`` (0: a free one)."""
        pool = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "mock", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                text = "\n".join(prompt_texts(body))
                if "MOCK-FAIL-500" in text:
                    self._send(500, {"error": {"message": "mock backend failure", "type": "InternalError"}})
                    return
                if "MOCK-SLOW" in text:
                    time.sleep(SLOW_S)
                prompt = pool.prompt_tokens(body)
                max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
                need = prompt + (max_tokens or 1)
                if need > pool.context_tokens:
                    with pool.lock:
                        pool.refused.append({"body": body, "prompt_tokens": prompt})
                    self._send(
                        400,
                        {
                            "object": "error",
                            "message": (
                                f"This model's maximum context length is {pool.context_tokens} tokens. "
                                f"However, you requested {need} tokens ({prompt} in the messages, "
                                f"{max_tokens or 1} in the completion). Please reduce the length of the "
                                "messages or completion."
                            ),
                            "type": "BadRequestError",
                            "param": None,
                            "code": 400,
                        },
                    )
                    return
                with pool.lock:
                    pool.requests.append({"body": body, "prompt_tokens": prompt})
                reply = f"pool={pool.name} prompt_tokens={prompt}"
                usage = {"prompt_tokens": prompt, "completion_tokens": 3, "total_tokens": prompt + 3}
                created = int(time.time())
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    words = reply.split(" ")
                    for k, word in enumerate(words):
                        piece = word + (" " if k < len(words) - 1 else "")
                        chunk = {
                            "id": "mock-stream",
                            "object": "chat.completion.chunk",
                            "created": created,
                            "model": body.get("model"),
                            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                        }
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                    final = {
                        "id": "mock-stream",
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": body.get("model"),
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    }
                    if (body.get("stream_options") or {}).get("include_usage"):
                        final["usage"] = usage
                    self.wfile.write(f"data: {json.dumps(final)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self._send(
                    200,
                    {
                        "id": "mock-1",
                        "object": "chat.completion",
                        "created": created,
                        "model": body.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": reply},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": usage,
                    },
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def prose_corpus(repo) -> str:
    """English prose from the project's own docs: their paragraphs of plain text (no tables, code,
    headings or lists), in order."""
    kept = []
    for page in sorted((repo / "docs").glob("*.md")):
        fenced = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                fenced = not fenced
                continue
            plain = line.strip()
            if fenced or len(plain) < 40 or plain[0] in "|#-*>0123456789<!" or "`" in plain or "|" in plain:
                continue
            kept.append(plain)
    return " ".join(kept)


def code_corpus(repo) -> str:
    """Python source: the project's own core modules."""
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((repo / "fleetopt" / "core").glob("*.py")))


def free_port() -> int:
    """A free TCP port on loopback."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def litellm_tiktoken_cache() -> str:
    """LiteLLM's bundled tiktoken files (cl100k_base offline), found without importing LiteLLM."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.origin is not None
    return str(Path(spec.origin).parent / "litellm_core_utils" / "tokenizers")


def start_litellm(config_path, workdir, repo, key: str, timeout_s: float = 120.0, port: int | None = None):
    """Start ``litellm --config`` on a loopback port (default: a free one); (process, URL, log path). Raises
    RuntimeError when it exits or does not answer /health/liveliness within ``timeout_s``."""
    import os
    import shutil
    import subprocess
    import sys
    import urllib.request
    from pathlib import Path

    port = free_port() if port is None else port
    env = {
        **os.environ,
        "LITELLM_MASTER_KEY": key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of the price list at start-up
        "HF_HUB_OFFLINE": "1",  # LiteLLM counts streamed tokens with the model's tokenizer: no download
        "TIKTOKEN_CACHE_DIR": litellm_tiktoken_cache(),
        "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]),
    }
    script = Path(sys.executable).parent / "litellm"
    command = [str(script)] if script.exists() else [shutil.which("litellm") or "litellm"]
    log_path = Path(workdir) / f"litellm-{port}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [*command, "--config", str(config_path), "--host", "127.0.0.1", "--port", str(port)],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"litellm exited with {process.returncode}: {log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/health/liveliness", timeout=2) as response:
                if response.status == 200:
                    return process, url, log_path
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_process(process)
            raise RuntimeError(f"litellm did not start in {timeout_s:.0f} s: {log_path.read_text()[-3000:]}")
        time.sleep(0.25)


def stop_process(process) -> None:
    """Terminate a process we started (kill it if it does not stop in 15 s)."""
    import subprocess

    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)
