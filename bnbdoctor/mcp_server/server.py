"""The MCP server itself: bnbdoctor's tools and rule pages for coding agents, over stdio.

Tools (each returns the command line's JSON document as structured content, the same document as JSON
text, and a short summary first):

- ``diagnose``: this machine, another interpreter here (``python``) or a recorded machine (``fixture``);
- ``explain``: a console log's text in, the ranked findings out;
- ``fit``: would ``from_pretrained(..., device_map=...)`` place this quantized model on the GPUs;
- ``rule``: a rule's documentation page (Markdown), or the index.

Resources: ``bnbdoctor://rules`` (the index) and ``bnbdoctor://rules/BNB306`` (one page per rule).

Built on the official ``mcp`` SDK (the ``mcp`` extra); only :mod:`bnbdoctor.mcp_server` imports it.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resources import FunctionResource
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from bnbdoctor import __version__
from bnbdoctor.mcp_server.commands import (
    DIAGNOSE_TIMEOUT_S,
    EXPLAIN_TIMEOUT_S,
    FIT_OVERHEAD_S,
    CommandResult,
    ToolInputError,
    diagnose_argv,
    explain_argv,
    fit_argv,
    lint_argv,
    run_report,
)
from bnbdoctor.rule_page import RulePageError, known_ids, page_text, pages_dir

INDEX_URI = "bnbdoctor://rules"
INSTRUCTIONS = (
    "bnbdoctor finds why bitsandbytes (with PyTorch) does not work on a machine and what to run about it. "
    "Call `diagnose` on the machine (or `python` = the project's interpreter), `explain` with a failing log's text, "
    "`fit` before loading a quantized model with device_map. Findings are ranked; each names a rule: read its page "
    "with `rule` or the resource bnbdoctor://rules/ID. Reports are redacted (home folder, user and host names)."
)
_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

RuleIds = Annotated[list[str] | None, Field(description="run only these rules, e.g. ['BNB306']; default: all rules")]


def _result(done: CommandResult) -> CallToolResult:
    text = json.dumps(done.document, indent=2, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=done.summary), TextContent(type="text", text=text)],
        structured_content=done.document,
    )


async def _run(argv: list[str], *, stdin: str | None = None, timeout_s: float, label: str) -> CallToolResult:
    def call() -> CommandResult:
        return run_report(argv, stdin=stdin, timeout_s=timeout_s, label=label)

    try:
        return _result(await anyio.to_thread.run_sync(call))
    except ToolInputError as exc:
        raise ToolError(str(exc)) from None


async def diagnose(
    python: Annotated[
        str | None,
        Field(
            description="path of the interpreter whose torch/bitsandbytes to examine (default: "
            "the active virtual or conda environment's, else the server's)"
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
        argv = diagnose_argv(python, fixture, rules or (), load)
    except ToolInputError as exc:
        raise ToolError(str(exc)) from None
    return await _run(argv, timeout_s=DIAGNOSE_TIMEOUT_S, label="diagnose")


async def explain(
    log: Annotated[str, Field(description="the console log's text: a traceback, python -m bitsandbytes output, ...")],
    rules: RuleIds = None,
) -> CallToolResult:
    """Explain a console log of a bitsandbytes failure: the facts it shows and the findings, root cause first.

    Returns `bnbdoctor explain --json`'s document; the matched log lines are in facts.log.matches."""
    return await _run(explain_argv(rules or ()), stdin=log, timeout_s=EXPLAIN_TIMEOUT_S, label="explain")


async def lint(
    paths: Annotated[
        list[str], Field(description="Python files, Jupyter notebooks or folders to check (read, never run)")
    ],
    python: Annotated[
        str | None, Field(description="the interpreter whose transformers/bitsandbytes versions decide severities")
    ] = None,
    rules: RuleIds = None,
) -> CallToolResult:
    """Check the caller's code for bitsandbytes mistakes before it runs: LoRA merged into 4-bit weights, bare
    load_in_4bit kwargs, .to()/.half() on a quantized model, device_map="auto" under DDP, and more.

    Returns `bnbdoctor lint --json`'s document (findings with file:line:col evidence and fixes as code)."""
    try:
        argv = lint_argv(paths, python, rules or ())
    except ToolInputError as exc:
        raise ToolError(str(exc)) from None
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
    python: Annotated[str | None, Field(description="the interpreter whose transformers to run")] = None,
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
        "python": python,
        "no_remedies": not remedies,
        "timeout": timeout_s,
    }
    try:
        argv = fit_argv(model, options)
    except ToolInputError as exc:
        raise ToolError(str(exc)) from None
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


def build_server() -> MCPServer[Any]:
    """The server with its four tools and one resource per rule page (and the index)."""
    server: MCPServer[Any] = MCPServer(
        name="bnbdoctor", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    server.add_tool(diagnose, title="Diagnose bitsandbytes", annotations=_READ_ONLY)
    server.add_tool(explain, title="Explain a bitsandbytes failure log", annotations=_READ_ONLY)
    server.add_tool(fit, title="Will the quantized model fit the GPUs", annotations=_READ_ONLY)
    server.add_tool(lint, title="Check code for bitsandbytes mistakes", annotations=_READ_ONLY)
    server.add_tool(rule_page, name="rule", title="A rule's page", annotations=_READ_ONLY)
    folder = pages_dir()
    if folder is not None:
        server.add_resource(_page_resource(None))
        for rule_id in known_ids(folder):
            server.add_resource(_page_resource(rule_id))
    return server
