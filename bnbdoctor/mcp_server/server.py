"""The MCP server itself: bnbdoctor's tools and rule pages for coding agents, over stdio.

Tools (each returns the command line's JSON document as structured content, the same document as JSON
text, and a short summary first):

- ``diagnose``: this machine, another interpreter here (``python``) or a recorded machine (``fixture``);
- ``explain``: a console log's text in, the ranked findings out;
- ``fit``: would ``from_pretrained(..., device_map=...)`` place this quantized model on the GPUs;
- ``lint``: the caller's scripts and notebooks, read (never run);
- ``rule``: a rule's documentation page (Markdown), or the index.

Resources: ``bnbdoctor://rules`` (the index) and ``bnbdoctor://rules/BNB306`` (one page per rule).

The trust model (docs/agents.md, "What the server trusts"): the client is not trusted to choose what runs. A
``python`` it names runs only when the server's configuration allows it (:class:`~.commands.Interpreters`);
nothing in the server's working folder runs (:func:`~.commands.own_command`); no value it sends is read as an
option; every answer -- documents, summaries, error lines -- is redacted here, whatever the command printed.
:func:`serve` runs the server on :mod:`~.transport`'s channel: each message answered, none unbounded, and a
call that ends early (cancelled, disconnected, stopped) leaves nothing running (:mod:`~.process`).

Built on the official ``mcp`` SDK (the ``mcp`` extra); only :mod:`bnbdoctor.mcp_server` imports it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, cast

import anyio
import anyio.from_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from bnbdoctor import __version__
from bnbdoctor.contract import note
from bnbdoctor.hosts.live import LiveHost
from bnbdoctor.mcp_server.commands import (
    DIAGNOSE_TIMEOUT_S,
    EXPLAIN_TIMEOUT_S,
    FIT_OVERHEAD_S,
    CommandResult,
    Interpreters,
    ToolInputError,
    diagnose_argv,
    explain_argv,
    fit_argv,
    lint_argv,
    own_command,
    read_answer,
)
from bnbdoctor.mcp_server.process import CommandFailed, Supervisor
from bnbdoctor.mcp_server.transport import Input, Output, Wire, start_reader
from bnbdoctor.redact import Redactor
from bnbdoctor.report import Report
from bnbdoctor.rule_page import RulePageError, known_ids, page_text, pages_dir
from bnbdoctor.serde import field_names

INDEX_URI = "bnbdoctor://rules"
INSTRUCTIONS = (
    "bnbdoctor finds why bitsandbytes (with PyTorch) does not work on a machine and what to run about it. "
    "Call `diagnose` on the machine (or `python` = the project's interpreter, one the server allows), `explain` "
    "with a failing log's text, `fit` before loading a quantized model with device_map. Findings are ranked; each "
    "names a rule: read its page with `rule` or the resource bnbdoctor://rules/ID. Reports are redacted (home "
    "folder, user and host names, secret-shaped values)."
)
#: explain, lint and rule read what they are given (lint may read an allowed interpreter's package versions).
_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
#: diagnose and fit run code in the examined interpreter (the facts script, a dlopen of bitsandbytes' library,
#: fit's engine importing the user's transformers): bnbdoctor writes nothing, but what those imports load may
#: write caches of their own, so they are not called read-only.
_RUNS_INTERPRETER = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
#: Where a message of the server itself is printed: stderr (stdout is the channel).
_TERMINAL_HELP = (
    "bnbdoctor mcp is an MCP server for coding agents: an MCP client starts it and speaks JSON-RPC on its "
    "stdin and stdout (docs/agents.md says how to add it to an agent). It is waiting for such messages now; "
    "Ctrl-D or Ctrl-C ends it."
)


@dataclass
class ServerContext:
    """What the tools share: the interpreters a client may name, the redactor of every answer, the commands."""

    interpreters: Interpreters
    redactor: Redactor
    supervisor: Supervisor = field(default_factory=Supervisor)
    host: LiveHost = field(default_factory=LiveHost)

    def redact_text(self, text: str) -> str:
        return self.redactor.text(text)

    def redact_document(self, document: Any) -> Any:
        return self.redactor.walk(document, field_names(Report))


_context: ServerContext | None = None


def _ctx() -> ServerContext:
    if _context is None:  # pragma: no cover - build_server sets it
        raise RuntimeError("the server was not built")
    return _context


def default_interpreters(allow_python: Sequence[str] = (), host: LiveHost | None = None) -> Interpreters:
    """The interpreters the server allows: the one the doctor would examine in the server's environment (the
    active virtualenv or conda env, else python3 on PATH, else its own), and each ``allow_python``.
    Raises ToolInputError for an ``allow_python`` that names no interpreter."""
    from bnbdoctor.probes.base import ProbeContext, ProbeOptions
    from bnbdoctor.probes.python_env import choose_interpreter, resolve_python

    host = host or LiveHost()
    allowed = []
    for given in allow_python:
        found = resolve_python(host, given)
        if found is None:
            raise ToolInputError(f"--allow-python {given}: no such file, venv or conda folder, or command on PATH")
        allowed.append(found)
    # The doctor says what is wrong with its own choice when it runs; here the list is only smaller.
    with contextlib.suppress(Exception):
        allowed.insert(0, choose_interpreter(ProbeContext(host, ProbeOptions()))[0])
    return Interpreters(allowed)


RuleIds = Annotated[list[str] | None, Field(description="run only these rules, e.g. ['BNB306']; default: all rules")]


def _result(done: CommandResult) -> CallToolResult:
    text = json.dumps(done.document, indent=2, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=done.summary), TextContent(type="text", text=text)],
        structured_content=done.document,
    )


def _refuse(exc: Exception) -> ToolError:
    """A tool error of one redacted line."""
    return ToolError(_ctx().redact_text(" ".join(str(exc).split())))


async def _run(argv: list[str], *, stdin: str | None = None, timeout_s: float, label: str) -> CallToolResult:
    """Run ``bnbdoctor ARGV`` for one call; the answer redacted. Cancelling the call kills the command."""
    ctx = _ctx()
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    try:
        finished = await ctx.supervisor.run(
            own_command(argv),
            stdin=(stdin or "").encode("utf-8"),
            env=env,
            timeout_s=timeout_s,
            label=label,
        )
        done = read_answer(finished.returncode, finished.stdout, finished.stderr, label, ctx.redact_document)
    except (ToolInputError, CommandFailed) as exc:
        raise _refuse(exc) from None
    return _result(done)


def _python(given: str | None) -> str | None:
    """The client's ``python``, when the server allows it (:class:`Interpreters`)."""
    from bnbdoctor.probes.python_env import resolve_python

    ctx = _ctx()
    return ctx.interpreters.check(given, lambda path: resolve_python(ctx.host, path))


async def diagnose(
    python: Annotated[
        str | None,
        Field(
            description="the interpreter whose torch/bitsandbytes to examine, one the server allows (default: "
            "the active virtual or conda environment's, else python3 on PATH, as the command line chooses)"
        ),
    ] = None,
    fixture: Annotated[
        str | None, Field(description="a recorded machine instead of this one (names: bnbdoctor --list-fixtures)")
    ] = None,
    rules: RuleIds = None,
    load: Annotated[bool, Field(description="try the real dlopen of the native library in a subprocess")] = True,
) -> CallToolResult:
    """Diagnose bitsandbytes on this machine (or another interpreter here, or a recorded machine).

    Returns the doctor's JSON report (`bnbdoctor --json`): findings root cause first, each with evidence,
    a remediation with commands fitted to the machine, and the facts gathered. Exit 1 means error findings."""
    try:
        argv = diagnose_argv(_python(python), fixture, rules or (), load)
    except ToolInputError as exc:
        raise _refuse(exc) from None
    return await _run(argv, timeout_s=DIAGNOSE_TIMEOUT_S, label="diagnose")


async def explain(
    log: Annotated[str, Field(description="the console log's text: a traceback, python -m bitsandbytes output, ...")],
    rules: RuleIds = None,
) -> CallToolResult:
    """Explain a console log of a bitsandbytes failure: the facts it shows and the findings, root cause first.

    Returns `bnbdoctor explain --json`'s document; the matched log lines are in facts.log.matches."""
    try:
        argv = explain_argv(rules or ())
    except ToolInputError as exc:
        raise _refuse(exc) from None
    return await _run(argv, stdin=log, timeout_s=EXPLAIN_TIMEOUT_S, label="explain")


async def lint(
    paths: Annotated[
        list[str], Field(description="Python files, Jupyter notebooks or folders to check (read, never run)")
    ],
    python: Annotated[
        str | None,
        Field(
            description="the interpreter whose transformers/bitsandbytes versions decide severities "
            "(one the server allows)"
        ),
    ] = None,
) -> CallToolResult:
    """Check the caller's code for bitsandbytes mistakes before it runs: LoRA merged into 4-bit weights, bare
    load_in_4bit kwargs, .to()/.half() on a quantized model, device_map="auto" under DDP, and more.

    Returns `bnbdoctor lint --json`'s document (findings with file:line:col evidence and fixes as code)."""
    try:
        argv = lint_argv(paths, _python(python))
    except ToolInputError as exc:
        raise _refuse(exc) from None
    return await _run(argv, timeout_s=EXPLAIN_TIMEOUT_S, label="lint")


async def fit(
    model: Annotated[
        str,
        Field(
            description="a Hugging Face model id (read from the local cache, no network), "
            "a local model folder or its config.json"
        ),
    ],
    quant: Annotated[str | None, Field(description="4bit or 8bit (default: 4bit or the checkpoint's own)")] = None,
    double_quant: bool = False,
    quant_type: Annotated[str | None, Field(description="bnb_4bit_quant_type: nf4 (default) or fp4")] = None,
    dtype: Annotated[str | None, Field(description="auto (default), bfloat16, float16, float32")] = None,
    device_map: Annotated[str | None, Field(description="device_map= (default auto)")] = None,
    max_memory: Annotated[str | None, Field(description='max_memory= as "0=24GiB,1=24GiB,cpu=64GiB"')] = None,
    gpus: Annotated[
        str | None, Field(description="simulate GPUs with this much free memory: 24GiB,24GiB or 8x80GB")
    ] = None,
    cpu_memory: Annotated[str | None, Field(description="free CPU RAM when max_memory is not given")] = None,
    fp32_offload: Annotated[bool, Field(description="llm_int8_enable_fp32_cpu_offload=True")] = False,
    skip_modules: Annotated[list[str] | None, Field(description="llm_int8_skip_modules")] = None,
    python: Annotated[
        str | None, Field(description="the interpreter whose transformers to run (one the server allows)")
    ] = None,
    remedies: Annotated[bool, Field(description="also simulate the remedies (slower)")] = True,
    timeout_s: Annotated[float, Field(description="time limit for the placement engine", gt=0, le=1800)] = 180.0,
) -> CallToolResult:
    """Predict, offline and without a GPU, whether from_pretrained with a BitsAndBytesConfig and device_map places
    the model on the GPUs or raises "Some modules are dispatched on the CPU or the disk" (your own transformers).

    Returns `bnbdoctor fit --json`'s document. A model's own code is never run from here (no trust_remote_code)."""
    options: dict[str, Any] = {
        "quant": quant,
        "double_quant": double_quant,
        "quant_type": quant_type,
        "dtype": dtype,
        "device_map": device_map,
        "max_memory": max_memory,
        "gpus": gpus,
        "cpu_memory": cpu_memory,
        "fp32_offload": fp32_offload,
        "skip_modules": skip_modules or [],
        "python": None,
        "no_remedies": not remedies,
        "timeout": timeout_s,
    }
    try:
        options["python"] = _python(python)
        argv = fit_argv(model, options)
    except ToolInputError as exc:
        raise _refuse(exc) from None
    return await _run(argv, timeout_s=timeout_s + FIT_OVERHEAD_S, label="fit")


def rule_page(
    rule: Annotated[
        str | None, Field(description="a rule id (BNB306) or name (libstdcxx-too-old); none: the index")
    ] = None,
) -> str:
    """A rule's documentation page (Markdown): what it detects, why it matters, how to fix and confirm it."""
    try:
        return page_text(rule)
    except RulePageError as exc:
        raise ToolError(str(exc)) from None


def _page_resource(rule_id: str | None) -> FunctionResource:
    def read() -> str:
        return page_text(rule_id)

    if rule_id is None:
        return FunctionResource.from_function(
            read,
            INDEX_URI,
            name="rules",
            title="bnbdoctor rules (index)",
            mime_type="text/markdown",
            description="Every rule bnbdoctor checks, with its id, severity and summary.",
        )
    return FunctionResource.from_function(
        read,
        f"{INDEX_URI}/{rule_id}",
        name=rule_id,
        title=f"bnbdoctor rule {rule_id}",
        mime_type="text/markdown",
        description=f"The documentation page of rule {rule_id}.",
    )


def build_server(allow_python: Sequence[str] = ()) -> MCPServer[Any]:
    """The server with its tools and one resource per rule page (and the index). ``allow_python``: the
    interpreters a client may name besides the one the server's environment activates (:func:`default_interpreters`).
    Raises ToolInputError for one that names no interpreter."""
    global _context  # noqa: PLW0603 - one server a process: its tools read what it was built with
    host = LiveHost()
    _context = ServerContext(default_interpreters(allow_python, host), Redactor.for_machine(host.os_info()), host=host)
    server: MCPServer[Any] = MCPServer(
        name="bnbdoctor", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    server.add_tool(diagnose, title="Diagnose bitsandbytes", annotations=_RUNS_INTERPRETER)
    server.add_tool(explain, title="Explain a bitsandbytes failure log", annotations=_READ_ONLY)
    server.add_tool(fit, title="Will the quantized model fit the GPUs", annotations=_RUNS_INTERPRETER)
    server.add_tool(lint, title="Check code for bitsandbytes mistakes", annotations=_READ_ONLY)
    server.add_tool(rule_page, name="rule", title="A rule's page", annotations=_READ_ONLY)
    folder = pages_dir()
    if folder is not None:
        server.add_resource(_page_resource(None))
        for rule_id in known_ids(folder):
            server.add_resource(_page_resource(rule_id))
    return server


#: The signals that end the server as a client ending it would: what the calls started is killed first.
_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name))


async def serve(server: MCPServer[Any]) -> int:
    """Serve ``server`` on stdio until the client closes its end (0) or a signal stops it (128 + the signal).

    Whichever way it ends, the calls in flight are cancelled and their commands killed with what they started."""
    ctx = _ctx()
    wire = Wire()
    stopped: list[int] = []
    if os.isatty(wire.fd_in):
        note(_TERMINAL_HELP)
    lowlevel = server._lowlevel_server  # MCPServer.run_stdio_async, with this module's channel
    portal = anyio.from_thread.BlockingPortal()
    try:
        async with portal:
            try:
                async with anyio.create_task_group() as group:
                    output = Output(wire.fd_out, group.cancel_scope.cancel)
                    stdin = Input(start_reader(wire.fd_in, portal), output)
                    if sys.platform != "win32":
                        group.start_soon(_stop_on_signal, group.cancel_scope, stopped)
                    async with stdio_server(stdin=cast(Any, stdin), stdout=cast(Any, output)) as (read, write):
                        await lowlevel.run(read, write, lowlevel.create_initialization_options())
                    group.cancel_scope.cancel()
            finally:
                await portal.stop(cancel_remaining=True)  # the reader thread may be waiting on it
    finally:
        with anyio.CancelScope(shield=True):
            await ctx.supervisor.sweep()
        wire.release()
    return 128 + stopped[0] if stopped else 0


async def _stop_on_signal(scope: anyio.CancelScope, stopped: list[int]) -> None:
    with anyio.open_signal_receiver(*_STOP_SIGNALS) as signals:
        async for signum in signals:
            stopped.append(int(signum))
            scope.cancel()
            return
