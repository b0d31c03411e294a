"""``bnbdoctor mcp``: bnbdoctor as a tool coding agents call, an MCP server on stdio (docs/agents.md).

- :mod:`~bnbdoctor.mcp_server.commands`: what each tool runs (the command line, ``--json``) and its summary;
  it imports no MCP;
- :mod:`~bnbdoctor.mcp_server.process`: running one call's command, bounded and cancellable, with nothing left
  running after it;
- :mod:`~bnbdoctor.mcp_server.transport`: the stdio channel, every message answered and none unbounded;
- :mod:`~bnbdoctor.mcp_server.server`: the tools and rule-page resources, on the official ``mcp`` SDK, and
  the trust model (which interpreters a client may name).

The SDK is the optional extra ``mcp`` (``pip install ".[mcp]"`` from a clone; bnbdoctor is not on PyPI, so
``bnbdoctor[mcp]`` names nothing there): the core never imports it (an import
contract in pyproject.toml), and without it ``bnbdoctor mcp`` says how to install it, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bnbdoctor import __version__
from bnbdoctor.argparsing import Parser
from bnbdoctor.contract import note, shown_path
from bnbdoctor.report import ExitCode

#: The SDK bnbdoctor's ``mcp`` extra asks for (pyproject.toml), installed by name: ``bnbdoctor[mcp]`` is not on PyPI.
MCP_REQUIREMENT = "mcp>=2.3.0,<3"
INSTALL_HINT = (
    f'the MCP server needs the MCP SDK: {shown_path(sys.executable)} -m pip install "{MCP_REQUIREMENT}" '
    f'(pipx: pipx inject bnbdoctor "{MCP_REQUIREMENT}"; from a clone: pip install ".[mcp]")'
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="bnbdoctor mcp",
        description="Serve bnbdoctor's tools (diagnose, explain, fit, lint, rule) and rule pages to an MCP client "
        "(a coding agent) over stdio. The client starts this command; see docs/agents.md.",
    )
    parser.add_argument(
        "--allow-python",
        action="append",
        default=[],
        metavar="PATH",
        help="an interpreter a client may name in `python` (a file, a venv or conda folder, or a command on PATH; "
        "repeatable). Without it only the one the server's environment activates is allowed",
    )
    parser.add_argument("--version", action="version", version=f"bnbdoctor {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``bnbdoctor mcp`` (see :data:`bnbdoctor.cli.SUBCOMMANDS`): serves until stdin closes."""
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help (0) or a usage error (2, already printed)
        return int(exc.code or 0) if isinstance(exc.code, int) else int(ExitCode.FAILURE)
    try:
        import anyio

        from bnbdoctor.mcp_server.commands import ToolInputError
        from bnbdoctor.mcp_server.server import build_server, serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic", "anyio"):
            raise
        note(f"error: {INSTALL_HINT}")
        return int(ExitCode.FAILURE)
    try:
        server = build_server(args.allow_python)
    except ToolInputError as exc:
        note(f"error: {exc}")
        return int(ExitCode.FAILURE)
    try:
        return anyio.run(serve, server)
    except KeyboardInterrupt:  # Ctrl-C before the server listens for it
        return 130
