"""A chat-completions endpoint on 127.0.0.1 for the OpenAI-compatible adapter's tests (DESIGN.md §5).

The server is a real ``http.server`` the test starts on port 0: it records every request body and
answers with the next canned (status, JSON body), in the chat-completions wire format.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ChatServer:
    """A chat-completions endpoint on 127.0.0.1 answering from a queue.

    Attributes:
        answers: Queued ``(status, body)`` pairs, popped one per POST.
        requests: Every request received: ``{"path", "authorization", "body"}`` (body parsed).
        base_url: ``http://127.0.0.1:<port>/v1``.
    """

    def __init__(self) -> None:
        self.answers: list[tuple[int, dict]] = []
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                server.requests.append(
                    {
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "body": json.loads(self.rfile.read(length)),
                    }
                )
                if server.answers:
                    status, body = server.answers.pop(0)
                else:
                    status, body = 500, {"error": {"message": "the test queued no answer for this call"}}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def answer(self, status: int, body: dict) -> None:
        """Queue one answer."""
        self.answers.append((status, body))

    def start(self) -> ChatServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def completion(message: dict, finish: str = "stop", usage: dict | None = None, model: str = "gpt-4o-mini") -> dict:
    """A chat.completion body holding one assistant ``message``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1735689600,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": usage or {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57},
    }


def tool_call(call_id: str, name: str, args: dict) -> dict:
    """One ``tool_calls`` item as the chat-completions API writes it (arguments as a JSON string)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
