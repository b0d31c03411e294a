"""The fit engine script, assembled from its typed parts: valid, self-contained, and still answering on old Pythons.

The engine runs in the patient interpreter, where bnbdoctor is not installed, as one ``python -c``
script assembled from ``bnbdoctor/fit_protocol.py`` and ``bnbdoctor/fit/engine_parts/``. These tests
check the assembly itself; tests/test_fit.py checks what the script computes against the real
from_pretrained.
"""

from __future__ import annotations

import ast
import builtins
import glob
import json
import os
import subprocess
import symtable
import sys
from pathlib import Path

import pytest

from bnbdoctor import fit_protocol
from bnbdoctor.fit import script_assembly
from bnbdoctor.fit.engine import engine_script, parse_answer, script_with_request
from bnbdoctor.fit.engine_parts import PARTS
from bnbdoctor.fit.script_assembly import AssemblyError, Part, assemble, check, order, parse_part, read_part
from bnbdoctor.hosts.base import CommandResult
from bnbdoctor.units import human

ROOT = Path(__file__).resolve().parents[1]
#: A request that stops at the first step (importing torch), so any interpreter can answer it quickly.
REQUEST = {"config_source": "/nonexistent", "model_dir": "/nonexistent", "quant": "4bit", "scenarios": []}


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(level, module) of every import in ``tree``, nested ones included."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((0, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
    return found


def _undefined_globals(script: str) -> set[str]:
    """Global names the script reads (at module level or in any function) that nothing in it binds."""
    table = symtable.symtable(script, "<engine>", "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    used: set[str] = set()

    def walk(scope: symtable.SymbolTable, top: bool) -> None:
        for symbol in scope.get_symbols():
            if symbol.is_referenced() and (top or symbol.is_global()):
                used.add(symbol.get_name())
        for child in scope.get_children():
            walk(child, False)

    walk(table, True)
    return used - bound - set(dir(builtins))


def test_the_script_compiles_and_imports_no_bnbdoctor() -> None:
    script = engine_script()
    tree = ast.parse(script)
    compile(script, "<engine>", "exec")
    imports = _imports(tree)
    assert not [m for level, m in imports if level], "relative imports must be stripped"
    assert not [m for _, m in imports if m.split(".")[0] == "bnbdoctor"]
    assert ast.get_docstring(tree) and "patient" in (ast.get_docstring(tree) or "")
    # module-level imports: one __future__ line, then the stdlib only (the patient's stack inside functions)
    top: list[ast.stmt] = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert isinstance(top[0], ast.ImportFrom) and top[0].module == "__future__"
    assert all(root.split(".")[0] in sys.stdlib_module_names for _, root in _imports(ast.Module(top[1:], [])))
    assert "def main(" in script and script_with_request(REQUEST).endswith(
        "\nmain(json.loads(" + repr(json.dumps(REQUEST)) + "))\n"
    )


def test_every_part_uses_only_names_defined_before_it() -> None:
    parts = [read_part(module) for module in order()]
    assert parts[0].module == "bnbdoctor.fit_protocol"
    defined_by: dict[str, str] = {}
    for position, part in enumerate(parts):
        earlier = {p.module for p in parts[:position]}
        for source, names in part.uses.items():
            assert source in earlier, f"{part.module} imports from {source}"
            for name in names:
                assert defined_by.get(name) == source, f"{part.module}: {name} is not defined by {source}"
        for name in part.defines:
            assert name not in defined_by, f"{name} is defined twice ({defined_by.get(name)}, {part.module})"
            defined_by[name] = part.module
    assert not _undefined_globals(engine_script())
    # not vacuous: a name read at run time and bound nowhere is caught (one only in annotations is not)
    assert _undefined_globals("from __future__ import annotations\n\ndef f(a: Y) -> Z:\n    return X\n") == {"X"}


def test_the_protocol_imports_nothing() -> None:
    part = read_part("bnbdoctor.fit_protocol")
    assert not part.imports and not part.uses
    assert fit_protocol.MARKER in part.body and "SCRIPT_VERSION = 1" in part.body
    assert set(fit_protocol.INPUT_ERRORS) < {
        getattr(fit_protocol, n) for n in dir(fit_protocol) if n.startswith("ERROR_")
    }


def test_the_assembly_is_deterministic_and_cached() -> None:
    assert assemble() == assemble() == engine_script()
    assert engine_script() is engine_script()
    heads = [line for line in engine_script().splitlines() if line.startswith("# == ")]
    assert [h.split()[2] for h in heads] == [read_part(m).path for m in order()]


def test_the_assembly_refuses_parts_that_break_its_rules() -> None:
    def part(module: str, source: str) -> Part:
        return parse_part(f"bnbdoctor.fit.engine_parts.{module}", source, f"{module}.py")

    later = part("a", "from .b import g\n\ndef f():\n    return g()\n")
    with pytest.raises(AssemblyError, match="not an earlier part"):
        check([later, part("b", "def g():\n    return 1\n")])
    with pytest.raises(AssemblyError, match="does not define it"):
        check([part("b", "def g():\n    return 1\n"), part("a", "from .b import h\n")])
    with pytest.raises(AssemblyError, match="defined by both"):
        check([part("a", "X = 1\n"), part("b", "X = 2\n")])
    with pytest.raises(AssemblyError, match="only the stdlib"):
        part("a", "import torch\n")
    with pytest.raises(AssemblyError, match="imports bnbdoctor"):
        part("a", "def f():\n    import bnbdoctor.fit\n")
    with pytest.raises(AssemblyError, match="inside a function"):
        part("a", "def f():\n    from .b import g\n")
    kept = part(
        "a",
        '"""Doc."""\n\nfrom __future__ import annotations\n\nimport os\nfrom typing import TYPE_CHECKING'
        "\n\nfrom .b import g\n\nif TYPE_CHECKING:\n    from .c import T\n\n# a comment\nX = os.sep\n",
    )
    assert kept.body == "# a comment\nX = os.sep"
    assert kept.futures == {"annotations"} and kept.uses == {"bnbdoctor.fit.engine_parts.b": {"g"}}
    assert kept.imports == {("os", None, None), ("typing", "TYPE_CHECKING", None)} and kept.defines == {"X"}


def test_the_script_stays_valid_python_3_7() -> None:
    # Past the version check the engine needs transformers >= 5.12, hence Python >= 3.10; before it, an old
    # interpreter must still get as far as saying what it lacks.
    ast.parse(engine_script(), feature_version=(3, 7))


def _old_pythons() -> list[str]:
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.[789].*/bin/python")))
    return found[:1] + found[-1:] if found else []


@pytest.mark.parametrize("python", _old_pythons() or [pytest.param("", marks=pytest.mark.skip("no pyenv 3.7-3.9"))])
def test_an_old_interpreter_still_answers(python: str, tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    proc = subprocess.run(
        [python, "-B", "-c", script_with_request(REQUEST)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env,
    )
    answer = parse_answer(
        CommandResult(argv=(python,), returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)
    )
    assert answer.data["error_kind"] == fit_protocol.ERROR_NO_TORCH and answer.data["fallback"] is True, proc.stderr
    # an old stack (transformers 4.x) is named as such, and the host falls back to the approximate mode
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text('__version__ = "2.1.0"\n')
    (tmp_path / "transformers").mkdir()
    (tmp_path / "transformers" / "__init__.py").write_text('__version__ = "4.46.0"\n')
    proc = subprocess.run(
        [python, "-B", "-c", script_with_request(REQUEST)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**env, "PYTHONPATH": str(tmp_path)},
    )
    data = parse_answer(
        CommandResult(argv=(python,), returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)
    ).data
    assert data["error_kind"] == fit_protocol.ERROR_UNSUPPORTED_TRANSFORMERS and data["fallback"] is True
    assert data["error"] == "transformers 4.46.0 is outside the range bnbdoctor fit replicates (5.12 to 5.x)"
    assert data["versions"] == {"python": data["versions"]["python"], "torch": "2.1.0", "transformers": "4.46.0"}


#: Values of the shared vocabulary distinctive enough that a literal copy is a duplicate, not a coincidence.
_DISTINCTIVE = {
    fit_protocol.MARKER,
    fit_protocol.REMEDY_EXPLICIT_MAP,
    fit_protocol.REMEDY_UPGRADE_TRANSFORMERS,
    fit_protocol.REMEDY_QUANT_4BIT,
    fit_protocol.REMEDY_MIN_GPU_MEMORY,
    fit_protocol.REMEDY_MORE_GPUS,
    fit_protocol.ORIGIN_FULL_BUDGET,
    fit_protocol.ORIGIN_MAX_MEMORY_SEQUENTIAL,
    fit_protocol.VERDICT_ALL_CPU,
    fit_protocol.VERDICT_LIKELY_FITS,
    fit_protocol.VERDICT_LIKELY_RAISES,
    fit_protocol.STATUS_PASSES,
    fit_protocol.STATUS_UNVERIFIED,
    fit_protocol.ENGINE_STANDIN,
    *(getattr(fit_protocol, n) for n in dir(fit_protocol) if n.startswith("ERROR_")),
}
#: fit/render.py and fit/cli.py are being moved by the output-formats work (render/): checked once they are there.
_NOT_YET = {"bnbdoctor/fit/render.py", "bnbdoctor/fit/cli.py"}


def test_the_shared_strings_have_one_home() -> None:
    files = sorted(
        {
            *glob.glob(str(ROOT / "bnbdoctor" / "fit" / "**" / "*.py"), recursive=True),
            *glob.glob(str(ROOT / "bnbdoctor" / "rules" / "placement" / "*.py")),
        }
    )
    copies = []
    for path in files:
        relative = os.path.relpath(path, ROOT).replace(os.sep, "/")
        if relative in _NOT_YET:
            continue
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in _DISTINCTIVE and id(node) not in docstrings:
                copies.append(f"{relative}:{node.lineno}: {node.value!r}")
    assert not copies, "use the constant from bnbdoctor/fit_protocol.py:\n" + "\n".join(copies)


def test_the_rules_do_not_import_the_fit_package() -> None:
    code = (
        "import sys, bnbdoctor.rules; bnbdoctor.rules.all_rules(); "
        "print([m for m in sys.modules if m == 'bnbdoctor.fit' or m.startswith('bnbdoctor.fit.')])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (None, "?"),
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.50 KiB"),
        (5939 << 20, "5.80 GiB"),
        (int(39.4 * (1 << 30)), "39.40 GiB"),
        (3 << 40, "3.00 TiB"),
        (-(1 << 20), "-1.00 MiB"),
    ],
)
def test_human_sizes(size: int | None, text: str) -> None:
    assert human(size) == text


def test_the_assembly_reads_bnbdoctors_own_files() -> None:
    assert script_assembly.PROTOCOL in order() and len(order()) == 1 + len(PARTS)
    for module in order():
        assert Path(script_assembly._source_path(module)).is_file()
