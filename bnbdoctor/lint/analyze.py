"""Follow values through a file's assignments and record the sites the BNB6xx rules judge.

The abstract values are few: a ``BitsAndBytesConfig(...)`` (its bits, compute dtype, quant storage,
fp32 offload), a dict literal (``**kwargs``), a torch dtype, and a model (its bits, how it was
loaded, whether PEFT wraps it). Statements are walked in order; a function body is walked with a
copy of the names known before it. Nothing the user wrote is imported or run.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace

from bnbdoctor.facts import LintFacts, LintSite
from bnbdoctor.lint.sources import SourceError, Unit, files_under, units_of

#: Text that says a script is launched as several processes (torchrun / accelerate / DDP).
DDP_MARKERS = re.compile(r"LOCAL_RANK|local_rank|torchrun|accelerate launch|init_process_group|DistributedDataParallel")
#: Text that says a script trains under FSDP.
FSDP_MARKERS = re.compile(r"fsdp|FullyShardedDataParallel", re.IGNORECASE)
SIXTEEN_BIT = ("float16", "bfloat16", "half")
MOVES = ("to", "cuda", "half", "float", "bfloat16")
CASTS = ("half", "float", "bfloat16")


@dataclass(frozen=True)
class BnbConfig:
    bits: int | None = None
    compute_dtype: str | None = None
    quant_storage: str | None = None
    fp32_offload: bool = False


@dataclass(frozen=True)
class Model:
    bits: int
    base: str = ""  # the source text of the model id given to from_pretrained
    loader: str = "AutoModelForCausalLM"
    peft: bool = False
    adapter: str = ""  # the source text of the adapter given to PeftModel.from_pretrained


@dataclass(frozen=True)
class DictValue:
    items: dict[str, ast.expr] = field(default_factory=dict)


@dataclass(frozen=True)
class Dtype:
    name: str


Value = BnbConfig | Model | DictValue | Dtype | None
Env = dict[str, Value]


def _last_name(node: ast.expr) -> str:
    """The name an expression ends with: ``x`` for ``x`` and for ``a.b.x``, "" for anything else."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _callee(node: ast.Call) -> str:
    """The called function's name (``from_pretrained`` in ``AutoModel.from_pretrained(...)``)."""
    return _last_name(node.func)


def _owner(node: ast.Call) -> str:
    """The name of what a method is called on (``AutoModel`` in ``AutoModel.from_pretrained(...)``), or ""."""
    return _last_name(node.func.value) if isinstance(node.func, ast.Attribute) else ""


def _truthy(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and bool(node.value)


def _kbit_flag(kw: dict[str, ast.expr]) -> int | None:
    """4 or 8 for a literal ``load_in_4bit=True`` / ``load_in_8bit=True`` among the keywords, else None."""
    return 4 if _truthy(kw.get("load_in_4bit")) else 8 if _truthy(kw.get("load_in_8bit")) else None


class FileAnalysis:
    """One file's walk: ``sites`` grows as statements are visited; ``env`` carries across notebook cells."""

    def __init__(self, file: str, whole_text: str) -> None:
        self.file = file
        self.ddp = bool(DDP_MARKERS.search(whole_text))
        self.fsdp = bool(FSDP_MARKERS.search(whole_text))
        self.sites: list[LintSite] = []
        self.env: Env = {}
        self.lines: list[str] = []
        self.cell: int | None = None

    # -- values ---------------------------------------------------------------------------------
    def value(self, node: ast.expr | None, env: Env) -> Value:
        if node is None:
            return None
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "torch":
                return Dtype(node.attr)
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return Dtype(node.value) if node.value in (*SIXTEEN_BIT, "float32", "auto") else None
        if isinstance(node, ast.Dict):
            keys = {k.value: v for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)}
            return DictValue({str(k): v for k, v in keys.items()})
        if isinstance(node, ast.Call):
            return self.call_value(node, env)
        return None

    def kwargs(self, node: ast.Call, env: Env) -> dict[str, ast.expr]:
        """The call's keywords, with ``**name`` / ``**{...}`` dict literals expanded."""
        found: dict[str, ast.expr] = {}
        for keyword in node.keywords:
            if keyword.arg is not None:
                found[keyword.arg] = keyword.value
                continue
            expanded = self.value(keyword.value, env)
            if isinstance(expanded, DictValue):
                found.update(expanded.items)
        return found

    def call_value(self, node: ast.Call, env: Env) -> Value:
        name = _callee(node)
        if name == "BitsAndBytesConfig":
            kw = self.kwargs(node, env)
            bits = _kbit_flag(kw)
            compute = self.value(kw.get("bnb_4bit_compute_dtype"), env)
            storage = self.value(kw.get("bnb_4bit_quant_storage"), env)
            return BnbConfig(
                bits,
                compute.name if isinstance(compute, Dtype) else ("?" if "bnb_4bit_compute_dtype" in kw else None),
                storage.name if isinstance(storage, Dtype) else ("?" if "bnb_4bit_quant_storage" in kw else None),
                _truthy(kw.get("llm_int8_enable_fp32_cpu_offload")),
            )
        if name == "dict" and not node.args:
            return DictValue({k.arg: k.value for k in node.keywords if k.arg})
        if name == "from_pretrained" and _owner(node) in ("PeftModel", "AutoPeftModelForCausalLM"):
            wrapped = self.value(node.args[0], env) if node.args else None
            if isinstance(wrapped, Model):
                model_id = node.args[1] if len(node.args) > 1 else self.kwargs(node, env).get("model_id")
                adapter = self.source(model_id) if model_id is not None else ""
                return replace(wrapped, peft=True, adapter=adapter)
            return None
        if name == "from_pretrained":
            return self.loaded_model(node, env)
        if name in ("get_peft_model", "prepare_model_for_kbit_training") and node.args:
            wrapped = self.value(node.args[0], env)
            if isinstance(wrapped, Model):
                return replace(wrapped, peft=wrapped.peft or name == "get_peft_model")
            return None
        if isinstance(node.func, ast.Attribute):
            receiver = self.value(node.func.value, env)
            if isinstance(receiver, Model) and name in ("merge_and_unload", "eval", "train", "cuda", "to"):
                return receiver
        return None

    def loaded_model(self, node: ast.Call, env: Env) -> Model | None:
        kw = self.kwargs(node, env)
        config = self.value(kw.get("quantization_config"), env)
        bits = config.bits if isinstance(config, BnbConfig) else None
        if bits is None:
            bits = _kbit_flag(kw)
        if bits is None:
            return None
        base = self.source(node.args[0]) if node.args else self.source(kw.get("pretrained_model_name_or_path"))
        return Model(bits, base=base, loader=_owner(node) or "AutoModelForCausalLM")

    def source(self, node: ast.expr | None) -> str:
        if node is None:
            return ""
        end_line, end_col = node.end_lineno, node.end_col_offset
        if end_line is None or end_col is None or not self.lines:
            return ast.unparse(node)
        first, last = node.lineno - 1, end_line - 1
        if last >= len(self.lines):
            return ast.unparse(node)
        lines = [line.encode("utf-8") for line in self.lines[first : last + 1]]  # ast offsets are UTF-8 bytes
        lines[-1] = lines[-1][:end_col]
        lines[0] = lines[0][node.col_offset :]
        return "\n".join(line.decode("utf-8", errors="replace") for line in lines)

    # -- sites ----------------------------------------------------------------------------------
    def add(self, kind: str, node: ast.expr, **detail: str) -> None:
        code = self.source(node).split("\n")[0][:160]
        self.sites.append(LintSite(kind, self.file, node.lineno, node.col_offset + 1, code, self.cell, detail))

    def check_call(self, node: ast.Call, env: Env) -> None:
        name = _callee(node)
        if name == "from_pretrained" and _owner(node) not in ("PeftModel", "AutoPeftModelForCausalLM"):
            self.check_load(node, env)
        elif isinstance(node.func, ast.Attribute):
            receiver = self.value(node.func.value, env)
            if not isinstance(receiver, Model):
                return
            # every site on a k-bit model's method says which model, its bits and the method
            called = {"bits": str(receiver.bits), "method": name, "model": self.source(node.func.value)}
            if name in ("merge_and_unload", "merge_adapter") and receiver.peft:
                self.add(
                    "merge",
                    node,
                    **called,
                    base=receiver.base,
                    loader=receiver.loader,
                    adapter=receiver.adapter,
                )
            elif name in MOVES:
                args = [self.source(a) for a in node.args] + [self.source(k.value) for k in node.keywords]
                dtype_arg = any(isinstance(self.value(a, env), Dtype) for a in node.args) or any(
                    k.arg == "dtype" for k in node.keywords
                )
                cast = name in CASTS or dtype_arg
                self.add("move", node, **called, args=", ".join(args), cast="yes" if cast else "no")

    def check_load(self, node: ast.Call, env: Env) -> None:
        kw = self.kwargs(node, env)
        for key in ("load_in_4bit", "load_in_8bit"):
            if _truthy(kw.get(key)):
                self.add("kbit_kwarg", node, kwarg=key, base=self.source(node.args[0]) if node.args else "")
        if "llm_int8_enable_fp32_cpu_offload" in kw:
            self.add("offload_kwarg", node, loader=_owner(node))
        model = self.loaded_model(node, env)
        if model is None:
            return
        device_map = kw.get("device_map")
        if self.ddp and isinstance(device_map, ast.Constant) and device_map.value == "auto":
            self.add("device_map_auto", node, bits=str(model.bits))
        config = self.value(kw.get("quantization_config"), env)
        if not isinstance(config, BnbConfig) or config.bits != 4:
            return
        dtype = self.value(kw.get("torch_dtype", kw.get("dtype")), env)
        if config.compute_dtype is None and isinstance(dtype, Dtype) and dtype.name in SIXTEEN_BIT:
            self.add("compute_dtype", node, dtype=dtype.name, config=self.source(kw.get("quantization_config")))
        if self.fsdp and config.quant_storage is None:
            dtype_name = dtype.name if isinstance(dtype, Dtype) and dtype.name in SIXTEEN_BIT else "bfloat16"
            self.add("quant_storage", node, dtype=dtype_name, config=self.source(kw.get("quantization_config")))

    # -- statements -----------------------------------------------------------------------------
    def walk(self, body: list[ast.stmt], env: Env) -> None:
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.walk(statement.body, dict(env))  # a scope of its own: what it binds stays inside
                continue
            for node in self.expressions(statement):
                for call in sorted(
                    (n for n in ast.walk(node) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset)
                ):
                    self.check_call(call, env)
            self.bind(statement, env)
            for inner in ("body", "orelse", "finalbody"):
                block = getattr(statement, inner, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    self.walk(block, env)
            for handler in getattr(statement, "handlers", []) or []:
                self.walk(handler.body, env)

    @staticmethod
    def expressions(statement: ast.stmt) -> list[ast.expr]:
        """The expressions a statement evaluates itself (not those of its nested blocks)."""
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)):
            return [statement.value] if statement.value is not None else []
        if isinstance(statement, (ast.If, ast.While)):
            return [statement.test]
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            return [statement.iter]
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            return [item.context_expr for item in statement.items]
        return []

    def bind(self, statement: ast.stmt, env: Env) -> None:
        if isinstance(statement, ast.Assign):
            value = self.value(statement.value, env)
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    env[target.id] = value
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            env[statement.target.id] = self.value(statement.value, env)

    def run(self, unit: Unit) -> None:
        self.cell = unit.cell
        self.lines = unit.text.splitlines()  # source segments by line (ast.get_source_segment re-splits per call)
        self.walk(ast.parse(unit.text, filename=unit.file).body, self.env)


def analyze_source(text: str, file: str = "<string>") -> list[LintSite]:
    """The sites in one Python source text."""
    analysis = FileAnalysis(file, text)
    analysis.run(Unit(file, text))
    return analysis.sites


def lint_facts(paths: list[str]) -> LintFacts:
    """Read every file under ``paths``; a file that cannot be read or parsed is one line in ``unparsed``."""
    facts = LintFacts()
    for path in files_under(paths):
        file = str(path)
        facts.files.append(file)
        try:
            units = units_of(path)
        except SourceError as exc:
            facts.unparsed[file] = str(exc)
            continue
        analysis = FileAnalysis(file, "\n".join(unit.text for unit in units))
        for unit in units:
            try:
                analysis.run(unit)
            except SyntaxError as exc:
                cell = f"cell {unit.cell} " if unit.cell is not None else ""
                where = f"line {exc.lineno}: " if exc.lineno else ""  # NUL bytes: no line
                facts.unparsed[file] = f"{cell}{where}{exc.msg}"
                if unit.cell is None:
                    break
            except (RecursionError, MemoryError):
                # Python's own parser gives up on 100,000 nested `not`s or lambdas with MemoryError
                cell = f"cell {unit.cell}: " if unit.cell is not None else ""
                facts.unparsed[file] = f"{cell}nested too deeply to parse"
                break
            except ValueError as exc:
                facts.unparsed[file] = f"{type(exc).__name__}: {exc}"
                break
            except Exception as exc:  # noqa: BLE001 - one odd file must not lose the other files' findings
                facts.unparsed[file] = f"bnbdoctor could not lint it ({type(exc).__name__}: {exc}); please report this"
                break
        facts.sites.extend(analysis.sites)
    if not facts.files:
        raise SourceError(f"no Python files or notebooks under {', '.join(paths)}")
    return facts
