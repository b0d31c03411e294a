"""The stdio channel of ``bnbdoctor mcp``: every message answered, none unbounded (issue 25, item 12).

The SDK's own stdio transport reads a line without bound (a 1 GiB line cost 2.1 GB) and drops what it cannot
parse or validate without a word, so a client waiting on that request waited forever. Here each line is read up
to :data:`MAX_MESSAGE` bytes and checked (:func:`check_line`) before the SDK sees it; what fails gets a JSON-RPC
error with the request's id when one can be found (else ``"id": null``):

- not UTF-8, not JSON, nested deeper than :data:`MAX_DEPTH` (a 100,000-deep nesting is an error, not a crash),
  a number of thousands of digits: ``-32700`` (parse error);
- a batch (JSON-RPC arrays; MCP sends one message a line), not an object, a request whose ``params`` is not an
  object, an id that is not a string or an integer, a line over :data:`MAX_MESSAGE`: ``-32600`` (invalid request);
- text holding a lone surrogate escape (``"\\ud800"``: valid JSON, not text, and no path or log can hold it):
  ``-32602`` (invalid params).

A notification that fails gets no answer (JSON-RPC answers no notification). The lines that pass go to the SDK
unchanged, through :func:`mcp.server.stdio.stdio_server`'s explicit streams.

:class:`Wire` claims the process's stdin and stdout for the channel, as the SDK does: while serving, fd 0 reads
the null device and fd 1 writes to stderr, so nothing a tool call starts, and nothing printed by accident,
reaches the client's channel.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, JSONRPCRequest, jsonrpc_message_adapter
from pydantic import ValidationError

#: The longest message (one line) read; a longer one is refused and skipped to its end, never kept. A log
#: for ``explain`` travels in one message: a bigger one is explained from its file by the command line.
MAX_MESSAGE = 32 * 1024 * 1024
#: The deepest nesting a message may have (an MCP request is five or six levels deep).
MAX_DEPTH = 64
#: How much of a message's beginning is searched for its id when the message cannot be parsed.
ID_SCAN = 64 * 1024
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Refusal:
    """A JSON-RPC error to answer a message with (``id`` None: ``"id": null``)."""

    code: int
    message: str
    id: int | str | None = None

    def line(self) -> str:
        return json.dumps({"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}})


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]')
_ID_VALUE = re.compile(r'\s*:\s*(-?[0-9]{1,18}(?![0-9.eE])|"(?:[^"\\]|\\.){0,512}")')


def find_id(text: str) -> int | str | None:
    """The ``id`` member of a top-level JSON object, read without parsing the whole text (which may be cut off,
    malformed or nested too deeply to parse): the first key ``"id"`` one level deep with a string or integer."""
    depth = 0
    for match in _TOKEN.finditer(text, 0, min(len(text), ID_SCAN)):
        found_text = match.group()
        if found_text in "{[":
            depth += 1
        elif found_text in "}]":
            depth -= 1
        elif depth == 1 and found_text == '"id"':
            value = _ID_VALUE.match(text, match.end())
            if value is not None:
                found = json.loads(value.group(1))
                return found if isinstance(found, (int, str)) else None
    return None


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _shape_problem(value: Any) -> str | None:
    """Why a parsed message is not something to hand on: too deep, or text that is not Unicode."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return "text that is not valid Unicode (a lone surrogate escape such as \\ud800)"
        elif isinstance(item, dict):
            for key, member in item.items():
                stack.append((key, depth + 1))
                stack.append((member, depth + 1))
        elif isinstance(item, list):
            stack.extend((member, depth + 1) for member in item)
    return None


def check_line(raw: bytes) -> tuple[str | None, list[Refusal]]:
    """One line of the channel: (the line to hand to the SDK, or None) and the errors to answer with."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, [Refusal(PARSE_ERROR, "the message is not UTF-8", find_id(raw[:ID_SCAN].decode("latin-1")))]
    if not text.strip():
        return None, []
    try:
        message = json.loads(text)
    except RecursionError:
        return None, [Refusal(PARSE_ERROR, f"the message is nested deeper than {MAX_DEPTH} levels", find_id(text))]
    except ValueError as exc:  # JSONDecodeError, or an integer of thousands of digits
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else " ".join(str(exc).split())[:120]
        return None, [Refusal(PARSE_ERROR, f"the message is not JSON ({reason})", find_id(text))]
    if isinstance(message, list):
        ids = [m.get("id") for m in message if isinstance(m, dict) and _valid_id(m.get("id"))]
        why = "a batch (a JSON array) is not an MCP message: send one message a line"
        return None, [Refusal(INVALID_REQUEST, why, rid) for rid in ids] or [Refusal(INVALID_REQUEST, why)]
    if not isinstance(message, dict):
        return None, [Refusal(INVALID_REQUEST, f"a message is a JSON object, not a {type(message).__name__}")]
    has_id = "id" in message
    rid = message.get("id") if _valid_id(message.get("id")) else None
    problem = _shape_problem(message)
    if problem is not None:
        code = INVALID_PARAMS if problem.startswith("text") else PARSE_ERROR
        return None, ([Refusal(code, f"the message holds {problem}", rid)] if has_id else [])
    if has_id and "method" in message:  # a request: it must be one, not pass for a notification
        try:
            JSONRPCRequest.model_validate(message)
        except ValidationError as exc:
            if not _valid_id(message.get("id")):
                why = "the request's id is neither a string nor an integer"
            elif "params" in message and not isinstance(message["params"], dict):
                why = f"the request's params is a {type(message['params']).__name__}, not an object"
            else:
                why = f"not a JSON-RPC 2.0 request ({exc.errors()[0].get('msg', 'invalid')})"
            return None, [Refusal(INVALID_REQUEST, why, rid)]
    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError:
        return None, ([Refusal(INVALID_REQUEST, "not a JSON-RPC 2.0 message", rid)] if has_id else [])
    return text, []


@dataclass(frozen=True)
class _TooLong:
    head: bytes


async def _lines(chunks: MemoryObjectReceiveStream[bytes]) -> AsyncIterator[bytes | _TooLong]:
    """The lines of the channel, each at most :data:`MAX_MESSAGE` bytes; a longer one is reported (with its
    beginning, to find its id) as soon as it is too long, and skipped to its end."""
    line = bytearray()
    skipping = False
    async for chunk in chunks:
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not skipping:
                if len(line) + len(piece) > MAX_MESSAGE:
                    yield _TooLong(bytes(line[:ID_SCAN]) or piece[:ID_SCAN])
                    line.clear()
                    skipping = True
                else:
                    line += piece
            if end < 0:
                break
            if not skipping:
                yield bytes(line)
            line.clear()
            skipping = False
            start = end + 1
    if line and not skipping:
        yield bytes(line)


class Output:
    """The channel's writing end, as the SDK's transport writes it (whole lines), shared with the refusals.
    A client that stopped reading (a broken pipe) is a client that left: ``on_closed`` is called."""

    def __init__(self, fd: int, on_closed: Callable[[], None]) -> None:
        self.fd = fd
        self.on_closed = on_closed
        self.closed = False
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        data = text.encode("utf-8", errors="replace")
        async with self._lock:
            if self.closed:
                return
            try:
                await anyio.to_thread.run_sync(self._write_all, data)
            except OSError:
                self.closed = True
                self.on_closed()

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    async def flush(self) -> None:
        return None


class Input:
    """The channel's reading end as the SDK's transport reads it (``async for line in stdin``): the checked
    lines only; each refusal is answered on ``output`` instead. Ends when the client closes its end."""

    def __init__(self, chunks: MemoryObjectReceiveStream[bytes], output: Output) -> None:
        self.chunks = chunks
        self.output = output

    def __aiter__(self) -> AsyncIterator[str]:
        return self._checked()

    async def _checked(self) -> AsyncIterator[str]:
        async for raw in _lines(self.chunks):
            if isinstance(raw, _TooLong):
                head = raw.head.decode("utf-8", errors="replace")
                mib = MAX_MESSAGE // (1024 * 1024)
                refusals = [Refusal(INVALID_REQUEST, f"the message is longer than {mib} MiB; refused", find_id(head))]
                text = None
            else:
                text, refusals = check_line(raw)
            for refusal in refusals:
                await self.output.write(refusal.line() + "\n")
            if text is not None:
                yield text


def start_reader(fd: int, portal: anyio.from_thread.BlockingPortal) -> MemoryObjectReceiveStream[bytes]:
    """Read ``fd`` in a daemon thread (a read blocks; a daemon thread never holds up the exit) into a stream of
    chunks, ending at end of file. The thread stops when the portal does."""
    send: MemoryObjectSendStream[bytes]
    send, receive = anyio.create_memory_object_stream[bytes](4)

    def pump() -> None:
        try:
            while True:
                try:
                    chunk = os.read(fd, _CHUNK)
                except OSError:
                    chunk = b""
                if not chunk:
                    portal.call(send.aclose)
                    return
                portal.call(send.send, chunk)
        except Exception:  # noqa: BLE001 - the portal stopped (the server is ending) or the reader left
            return

    threading.Thread(target=pump, name="bnbdoctor-mcp-stdin", daemon=True).start()
    return receive


class Wire:
    """The process's stdin and stdout, claimed for the channel: private copies of both descriptors serve the
    channel, fd 0 is pointed at the null device and fd 1 at stderr until :meth:`release`."""

    def __init__(self) -> None:
        self.fd_in = os.dup(0)
        self.fd_out = os.dup(1)
        self._saved = (os.dup(0), os.dup(1))
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        os.dup2(2, 1)

    def release(self) -> None:
        for fd, saved in zip((0, 1), self._saved, strict=True):
            with contextlib.suppress(OSError):
                os.dup2(saved, fd)
            os.close(saved)
        # fd_in stays open: the reader thread may still be blocked in a read of it, and a closed descriptor's
        # number would be handed to the next file opened. The process ends soon after.
        with contextlib.suppress(OSError):
            os.close(self.fd_out)
