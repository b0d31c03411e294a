"""Assembles the fit engine's one script from its typed parts: ``bnbdoctor/fit_protocol.py``, then ``engine_parts/``.

The engine runs in the patient interpreter as one ``python -c`` script, but it is written as typed
modules with one job each (see ``bnbdoctor/fit/engine_parts/__init__.py`` for the rules they keep).
:func:`assemble` joins them, in the order of ``PARTS``, into one module:

1. the package's docstring, then one ``from __future__`` line for every future feature a part uses;
2. the parts' module-level stdlib imports, merged and sorted (a part's other imports are errors);
3. each part's body, under a banner naming its file, with its docstring, its imports of earlier
   parts (relative imports: the names are already defined above it) and its ``if TYPE_CHECKING:``
   blocks removed. Everything else is kept verbatim, comments included.

It checks what the stripping relies on and raises :class:`AssemblyError` otherwise: a part imports
only names that an earlier part defines, no two parts define the same name, no part imports
``bnbdoctor`` or a non-stdlib module at module level. The result is compiled once before it is returned.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from bnbdoctor.fit.engine_parts import PARTS

PACKAGE = "bnbdoctor.fit.engine_parts"
PROTOCOL = "bnbdoctor.fit_protocol"
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the bnbdoctor package folder


class AssemblyError(Exception):
    """A part breaks a rule the assembly relies on (a bug in bnbdoctor, found by the tests)."""


@dataclass
class Part:
    """One module of the engine, taken apart for the assembly."""

    module: str  # dotted name
    path: str  # relative to the repository root, for the banner
    body: str  # the source less its docstring, imports and TYPE_CHECKING blocks
    futures: set[str] = field(default_factory=set)
    #: module-level stdlib imports: (module, name or None for ``import module``, alias or None)
    imports: set[tuple[str, str | None, str | None]] = field(default_factory=set)
    #: names taken from other parts at run time: {module: names}
    uses: dict[str, set[str]] = field(default_factory=dict)
    defines: set[str] = field(default_factory=set)


def order() -> list[str]:
    """The modules of the script, in assembly order."""
    return [PROTOCOL] + [f"{PACKAGE}.{name}" for name in PARTS]


def _source_path(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "bnbdoctor":
        raise AssemblyError(f"{module}: not a bnbdoctor module")
    return os.path.join(_ROOT, *parts[1:]) + ".py"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    names: list[str] = []
    for target in targets:
        names.extend(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in ``body``, nested ones included; imports are statements, so expressions are not visited."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for handler in getattr(node, "handlers", None) or []:
            yield from _statements(handler.body)
        for case in getattr(node, "cases", None) or []:
            yield from _statements(case.body)


def _check_nested_imports(module: str, tree: ast.Module, skip: set[int]) -> None:
    """Imports below module level must be absolute and not bnbdoctor's (they run as written, in the patient)."""
    for node in _statements(tree.body):
        if id(node) in skip or not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            raise AssemblyError(
                f"{module}, line {node.lineno}: a relative import inside a function "
                "(take names from other parts at module level)"
            )
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
        if any(name.split(".")[0] == "bnbdoctor" for name in names):
            raise AssemblyError(f"{module}, line {node.lineno}: imports bnbdoctor, which the patient does not have")


def read_part(module: str) -> Part:
    """Read one part from bnbdoctor's own files and take it apart (:func:`parse_part`)."""
    path = _source_path(module)
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    return parse_part(module, source, os.path.relpath(path, os.path.dirname(_ROOT)).replace(os.sep, "/"))


def parse_part(module: str, source: str, path: str) -> Part:
    """Split one part's source into what the assembly hoists, strips and keeps; raise on a broken rule."""
    tree = ast.parse(source, filename=path)
    part = Part(module=module, path=path, body="")
    package = module.rpartition(".")[0]
    drop: list[tuple[int, int]] = []
    top: set[int] = set()
    for index, node in enumerate(tree.body):
        end = node.end_lineno or node.lineno
        if (
            index == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            drop.append((node.lineno, end))  # the module docstring
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            part.futures.update(alias.name for alias in node.names)
            drop.append((node.lineno, end))
        elif isinstance(node, ast.ImportFrom) and node.level:
            source_module = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            for alias in node.names:
                if alias.asname not in (None, alias.name) or alias.name == "*":
                    raise AssemblyError(f"{module}, line {node.lineno}: import names from parts as they are")
                part.uses.setdefault(source_module, set()).add(alias.name)
            top.add(id(node))
            drop.append((node.lineno, end))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            top.add(id(node))
            targets = (
                [(node.module or "", a.name, a.asname) for a in node.names]
                if isinstance(node, ast.ImportFrom)
                else [(a.name, None, a.asname) for a in node.names]
            )
            for target in targets:
                root = target[0].split(".")[0]
                if root not in sys.stdlib_module_names:
                    raise AssemblyError(
                        f"{module}, line {node.lineno}: imports {target[0]} at module level; only "
                        "the stdlib may be imported there (import the patient's packages inside "
                        "functions, from earlier parts with a relative import)"
                    )
                part.imports.add(target)
            drop.append((node.lineno, end))
        elif isinstance(node, ast.If) and _is_type_checking(node):
            if node.orelse:
                raise AssemblyError(f"{module}, line {node.lineno}: `if TYPE_CHECKING:` with an else branch")
            top.update(id(inner) for inner in _statements(node.body))  # never runs: imports for the type checker
            drop.append((node.lineno, end))
        else:
            part.defines.update(_bound_names(node))
    _check_nested_imports(module, tree, top)
    dropped = {number for first, last in drop for number in range(first, last + 1)}
    kept = [line for number, line in enumerate(source.splitlines(), 1) if number not in dropped]
    part.body = _squeeze("\n".join(kept))
    return part


def _squeeze(text: str) -> str:
    """No leading or trailing blank lines, and at most two blank lines in a row."""
    out: list[str] = []
    blank = 0
    for line in text.strip("\n").splitlines():
        blank = blank + 1 if not line.strip() else 0
        if blank <= 2:
            out.append(line.rstrip())
    return "\n".join(out).strip("\n")


def _import_lines(imports: set[tuple[str, str | None, str | None]]) -> list[str]:
    plain = sorted({(m, alias) for m, name, alias in imports if name is None}, key=lambda t: (t[0], t[1] or ""))
    lines = [f"import {m}" + (f" as {alias}" if alias else "") for m, alias in plain]
    by_module: dict[str, set[tuple[str, str | None]]] = {}
    for m, name, alias in imports:
        if name is not None:
            by_module.setdefault(m, set()).add((name, alias))
    for m in sorted(by_module):
        names = sorted(by_module[m], key=lambda t: (t[0], t[1] or ""))
        lines.append(f"from {m} import " + ", ".join(n + (f" as {a}" if a else "") for n, a in names))
    return lines


def _header() -> str:
    path = os.path.join(_ROOT, "fit", "engine_parts", "__init__.py")
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    first = ast.parse(source).body[0]
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
        raise AssemblyError(f"{path}: the package docstring (the script's) is missing")
    return "\n".join(source.splitlines()[first.lineno - 1 : first.end_lineno])


def check(parts: list[Part]) -> None:
    """Raise :class:`AssemblyError` unless every part only uses names defined before it, each defined once."""
    defined: dict[str, str] = {}  # name -> the module defining it
    modules = [p.module for p in parts]
    imported = {alias or (name if name is not None else m.split(".")[0]) for p in parts for m, name, alias in p.imports}
    for position, part in enumerate(parts):
        for source_module, names in sorted(part.uses.items()):
            if source_module not in modules[:position]:
                raise AssemblyError(f"{part.module} imports from {source_module}, which is not an earlier part")
            for name in sorted(names):
                if defined.get(name) != source_module:
                    raise AssemblyError(f"{part.module} imports {name} from {source_module}, which does not define it")
        for name in sorted(part.defines):
            if name in defined:
                raise AssemblyError(f"{name} is defined by both {defined[name]} and {part.module}")
            if name in imported:
                raise AssemblyError(f"{part.module} defines {name}, which is also an imported name")
            defined[name] = part.module


def assemble() -> str:
    """The engine script: every part in order, self-contained, compiled once to check it."""
    parts = [read_part(module) for module in order()]
    check(parts)
    futures = sorted(set().union(*(p.futures for p in parts)))
    imports = set().union(*(p.imports for p in parts))
    chunks = [
        _header(),
        "# Assembled by bnbdoctor/fit/script_assembly.py from, in order:\n" + "\n".join(f"#   {p.path}" for p in parts),
    ]
    if futures:
        chunks.append(f"from __future__ import {', '.join(futures)}")
    chunks.append("\n".join(_import_lines(imports)))
    for part in parts:
        banner = f"# == {part.path} "
        chunks.append(banner + "=" * max(3, 100 - len(banner)) + "\n\n" + part.body)
    script = "\n\n\n".join(chunks) + "\n"
    compile(script, "<bnbdoctor fit engine>", "exec")
    return script
