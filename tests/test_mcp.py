"""``bnbdoctor mcp`` end to end: the official SDK's own client starts the server over stdio and calls every tool.

One session (a module fixture) lists the tools and resources and makes every call; the tests then compare
what came back with what the command line prints for the same question (the same JSON document, redacted).
A real ``fit`` (seconds: the placement engine runs) is a slow test of its own.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import ROOT

from bnbdoctor.mcp_server import INSTALL_HINT
from bnbdoctor.mcp_server.commands import fit_argv
from bnbdoctor.rule_page import page_text

if TYPE_CHECKING:
    from mcp import ClientSession, StdioServerParameters
    from mcp.types import CallToolResult

#: The MCP server is the optional extra (pip install "bnbdoctor[mcp]"); scripts/setup.sh installs it.
needs_mcp = pytest.mark.skipif(importlib.util.find_spec("mcp") is None, reason="the mcp extra is not installed")

FIXTURE = "centos7-cxxabi"
LINT_SCRIPT = ROOT / "tests" / "data" / "lint" / "qlora_merge_notebook_style.py"
LOG = ROOT / "tests" / "data" / "real_logs" / "cxxabi_not_found.txt"
TINY_MODEL = ROOT / "tests" / "data" / "fit" / "tiny-llama.json"
#: What differs between two runs of the same report: when it was made and how long its parts took.
VOLATILE = ("created", "timings", "duration_s")

Calls = Callable[["ClientSession"], Awaitable[dict[str, Any]]]


def _server() -> StdioServerParameters:
    from mcp import StdioServerParameters

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return StdioServerParameters(command=sys.executable, args=["-m", "bnbdoctor", "mcp"], env=env, cwd=str(ROOT))


def in_session(calls: Calls) -> dict[str, Any]:
    """Start ``bnbdoctor mcp`` with the SDK's stdio client, initialize, run ``calls``, close."""

    import anyio
    from mcp import ClientSession, stdio_client

    async def main() -> dict[str, Any]:
        with anyio.fail_after(300):
            async with stdio_client(_server()) as (read, write), ClientSession(read, write) as session:
                init = await session.initialize()
                results = await calls(session)
                results["init"] = init
                return results

    return anyio.run(main)


async def _every_call(session: ClientSession) -> dict[str, Any]:
    return {
        "tools": await session.list_tools(),
        "resources": await session.list_resources(),
        "index": await session.read_resource("bnbdoctor://rules"),
        "page": await session.read_resource("bnbdoctor://rules/BNB306"),
        "fixture": await session.call_tool("diagnose", {"fixture": FIXTURE}),
        "live": await session.call_tool("diagnose", {"python": sys.executable, "load": False, "rules": ["BNB001"]}),
        "both": await session.call_tool("diagnose", {"python": sys.executable, "fixture": FIXTURE}),
        "no_fixture": await session.call_tool("diagnose", {"fixture": "no-such-machine"}),
        "explain": await session.call_tool("explain", {"log": LOG.read_text(encoding="utf-8")}),
        "explain_empty": await session.call_tool("explain", {"log": ""}),
        "fit_missing": await session.call_tool("fit", {"model": str(ROOT / "no-such-model")}),
        "rule": await session.call_tool("rule", {"rule": "BNB306"}),
        "rule_by_name": await session.call_tool("rule", {"rule": "libstdcxx-too-old"}),
        "rule_index": await session.call_tool("rule", {}),
        "rule_unknown": await session.call_tool("rule", {"rule": "BNB999"}),
        "lint": await session.call_tool("lint", {"paths": [str(LINT_SCRIPT)]}),
        "lint_nothing": await session.call_tool("lint", {"paths": []}),
    }


@pytest.fixture(scope="module")
def session() -> dict[str, Any]:
    pytest.importorskip("mcp", reason='the mcp extra is not installed (pip install "bnbdoctor[mcp]")')
    return in_session(_every_call)


def cli_json(*args: str, stdin: str = "") -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args], input=stdin, capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode in (0, 1), done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def stable(document: dict[str, Any] | None) -> dict[str, Any]:
    """The document without what two runs of the same question differ in (VOLATILE, at any depth)."""
    assert document is not None

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items() if key not in VOLATILE}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    result: dict[str, Any] = strip(document)
    return result


def texts(result: CallToolResult) -> list[str]:
    from mcp.types import TextContent

    return [block.text for block in result.content if isinstance(block, TextContent)]


def test_the_server_names_itself_and_offers_every_tool(session: dict[str, Any]) -> None:
    assert session["init"].server_info.name == "bnbdoctor"
    assert session["init"].instructions and "diagnose" in session["init"].instructions
    tools = {tool.name: tool for tool in session["tools"].tools}
    assert set(tools) == {"diagnose", "explain", "fit", "lint", "rule"}
    assert {"python", "fixture", "rules", "load"} <= set(tools["diagnose"].input_schema["properties"])
    assert tools["explain"].input_schema["required"] == ["log"]
    assert "trust_remote_code" not in tools["fit"].input_schema["properties"]  # an agent never runs a model's code
    # explain, lint and rule only read; diagnose and fit run code in the examined interpreter (issue 25, item 10)
    read_only = {name for name, tool in tools.items() if tool.annotations and tool.annotations.read_only_hint}
    assert read_only == {"explain", "lint", "rule"}
    assert all(tool.annotations and tool.annotations.destructive_hint is False for tool in tools.values())
    assert all(tool.annotations and tool.annotations.open_world_hint is False for tool in tools.values())


def test_diagnose_a_recorded_machine_is_the_cli_document(session: dict[str, Any]) -> None:
    result: CallToolResult = session["fixture"]
    assert not result.is_error
    expected = cli_json("--json", "--fixture", FIXTURE)
    assert stable(result.structured_content) == stable(expected)
    summary, document = texts(result)
    assert stable(json.loads(document)) == stable(expected)  # the same document as text, for clients without it
    assert summary.startswith(f"bnbdoctor diagnose (fixture {FIXTURE}): 1 error, 1 warning")
    assert "exit 1 (error findings)" in summary and "- error BNB306 libstdcxx-too-old:" in summary
    assert "first step: conda create" in summary


def test_diagnose_another_interpreter_here(session: dict[str, Any]) -> None:
    result: CallToolResult = session["live"]
    assert not result.is_error, texts(result)
    document = result.structured_content or {}
    assert document["source"]["kind"] == "live"
    # BNB001 (the interpreter could not be examined) passes: this interpreter was examined, and its torch read
    assert document["summary"]["passed"] == 1 and document["summary"]["errors"] == 0
    assert document["facts"]["python"]["torch"]["version"] == importlib.metadata.version("torch")
    assert str(Path.home()) not in texts(result)[1]  # redacted, as the command line redacts by default


def test_bad_diagnose_input_is_a_tool_error_in_one_line(session: dict[str, Any]) -> None:
    both: CallToolResult = session["both"]
    assert both.is_error and "not both" in texts(both)[0]
    missing: CallToolResult = session["no_fixture"]
    assert missing.is_error and "no-such-machine" in texts(missing)[0]
    assert "Traceback" not in texts(missing)[0] and len(texts(missing)[0].splitlines()) == 1


def test_explain_is_the_cli_document(session: dict[str, Any]) -> None:
    result: CallToolResult = session["explain"]
    assert not result.is_error
    expected = cli_json("explain", "-", "--json", stdin=LOG.read_text(encoding="utf-8"))
    assert stable(result.structured_content) == stable(expected)
    assert "BNB306" in texts(result)[0]
    empty: CallToolResult = session["explain_empty"]
    assert not empty.is_error and "0 errors" in texts(empty)[0]


def test_fit_of_a_missing_model_is_a_tool_error(session: dict[str, Any]) -> None:
    result: CallToolResult = session["fit_missing"]
    assert result.is_error and "no-such-model" in texts(result)[0]


def test_rule_pages_as_a_tool_and_as_resources(session: dict[str, Any]) -> None:
    assert texts(session["rule"]) == [page_text("BNB306")]
    assert texts(session["rule_by_name"]) == [page_text("BNB306")]
    assert texts(session["rule_index"]) == [page_text(None)]
    unknown: CallToolResult = session["rule_unknown"]
    assert unknown.is_error and "BNB999" in texts(unknown)[0]
    uris = {str(resource.uri) for resource in session["resources"].resources}
    assert {"bnbdoctor://rules", "bnbdoctor://rules/BNB001", "bnbdoctor://rules/BNB306"} <= uris
    from mcp.types import TextResourceContents

    (index,) = session["index"].contents
    (page,) = session["page"].contents
    assert isinstance(index, TextResourceContents) and index.text == page_text(None)
    assert isinstance(page, TextResourceContents) and page.text == page_text("BNB306")
    assert page.mime_type == "text/markdown"


@needs_mcp
@pytest.mark.slow
def test_fit_is_the_cli_document() -> None:
    arguments = {"model": str(TINY_MODEL), "gpus": "24GiB", "remedies": False, "cpu_memory": "64GiB"}

    async def calls(session: ClientSession) -> dict[str, Any]:
        return {"fit": await session.call_tool("fit", arguments)}

    result: CallToolResult = in_session(calls)["fit"]
    assert not result.is_error, texts(result)
    expected = cli_json("fit", str(TINY_MODEL), "--json", "--gpus", "24GiB", "--no-remedies", "--cpu-memory", "64GiB")
    got = stable(result.structured_content)
    assert got["source"]["kind"] == "fit"
    assert [f["rule_id"] for f in got["findings"]] == [f["rule_id"] for f in expected["findings"]]
    assert got["summary"] == expected["summary"]


def test_without_the_extra_the_command_says_how_to_install_it() -> None:
    code = "import sys; sys.modules['mcp'] = None\nfrom bnbdoctor.cli import main\nsys.exit(main(['mcp']))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"bnbdoctor: error: {INSTALL_HINT}"


def test_fit_arguments_become_the_command_line() -> None:
    options = {
        "quant": "8bit",
        "double_quant": True,
        "fp32_offload": False,
        "skip_modules": ["lm_head", "gate"],
        "gpus": None,
        "timeout": 30.0,
    }
    # every value in --option=VALUE form and the model after "--": nothing a client sends is read as an option
    assert fit_argv("org/model", options) == [
        "fit",
        "--json",
        "--quant=8bit",
        "--double-quant",
        "--skip-modules=lm_head,gate",
        "--timeout=30.0",
        "--",
        "org/model",
    ]


def test_lint_is_the_cli_document(session: dict[str, Any]) -> None:
    result: CallToolResult = session["lint"]
    assert not result.is_error
    expected = cli_json("lint", str(LINT_SCRIPT), "--json")
    assert stable(result.structured_content) == stable(expected)
    assert {f["rule_id"] for f in expected["findings"]} >= {"BNB601"}  # the 4-bit merge the script does
    assert session["lint_nothing"].is_error and "at least one path" in texts(session["lint_nothing"])[0]
