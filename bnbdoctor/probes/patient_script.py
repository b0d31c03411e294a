"""Runs inside the *patient* interpreter: stdlib only, imports neither torch nor bitsandbytes.

bnbdoctor sends this file's source to ``python -B -c`` so that what it sees is exactly what the
user's interpreter sees (its sys.path, its site-packages). It reads package metadata and files,
prints one JSON object on stdout and exits. Keep it compatible with Python 3.6
(tests/test_patient_scripts.py runs it there).
"""

import ast
import csv
import importlib.util
import json
import os
import re
import site
import sys
import sysconfig

SCRIPT_VERSION = 1
OTHER_PACKAGES = (
    "transformers", "accelerate", "peft", "triton", "scipy", "numpy", "safetensors",
    "trl", "diffusers", "intel_extension_for_pytorch", "pytorch-triton-rocm",
)
#: transformers' own minimum bitsandbytes: the constant and the file it is read from (5.x, PR #41283).
TRANSFORMERS_BNB_CONSTANT = "BITSANDBYTES_MIN_VERSION"
TRANSFORMERS_BNB_FILE = ("utils", "import_utils.py")
#: Bounds: bytes of a source file read for one constant, files of the package folder compared with
#: RECORD (a wheel ships ~100; a folder far beyond that is reported as truncated), lines of one RECORD.
SOURCE_LIMIT = 2 * 1024 * 1024
RECORD_FILE_LIMIT = 2000
RECORD_LINE_LIMIT = 50000
UNLISTED_SHOWN = 40
_MODULE_SUFFIXES = (".py", ".so", ".dll", ".dylib", ".pyd")
_TORCH_LIB_HINTS = ("cud", "cublas", "cusparse", "nvrtc", "nvjitlink", "nccl", "hip", "roc",
                    "amdhip", "c10", "torch_cuda", "gomp", "stdc++", "sycl")


_DISTS = None


def normalise(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def distributions():
    """{normalised name: (version, metadata file)} from *.dist-info / *.egg-info folders on
    sys.path. Listing folders is far cheaper than importing importlib.metadata (~30 ms); the
    first entry on sys.path wins, as it does for imports."""
    global _DISTS
    if _DISTS is not None:
        return _DISTS
    found = {}
    for entry in sys.path:
        for name in list_dir(entry or "."):
            if name.endswith(".dist-info"):
                stem, meta = name[: -len(".dist-info")], "METADATA"
            elif name.endswith(".egg-info"):
                stem, meta = name[: -len(".egg-info")], "PKG-INFO"
            else:
                continue
            dist, _, rest = stem.partition("-")
            version = rest.split("-")[0] or None
            key = normalise(dist)
            if key not in found:
                path = os.path.join(entry or ".", name)
                found[key] = (version, os.path.join(path, meta) if os.path.isdir(path) else path)
    _DISTS = found
    return found


def dist_version(name):
    entry = distributions().get(normalise(name))
    return entry[0] if entry else None


def dist_metadata(name):
    """The metadata headers (multi-valued ones as lists), or None when not installed."""
    entry = distributions().get(normalise(name))
    if not entry:
        return None
    headers = {}
    try:
        with open(entry[1], "r", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    break
                key, sep, value = line.partition(":")
                if sep and not line[0].isspace():
                    headers.setdefault(key.strip(), []).append(value.strip())
    except OSError:
        pass
    return headers


def dist_info_text(name, file_name, limit=65536):
    """A file of ``name``'s *.dist-info folder (INSTALLER, direct_url.json), or None: no dist-info, no file."""
    entry = distributions().get(normalise(name))
    if not entry or not entry[1].endswith("METADATA"):
        return None
    try:
        with open(os.path.join(os.path.dirname(entry[1]), file_name), "r", encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return None


def dist_installer(name):
    """The INSTALLER file of a dist-info ("pip", "uv", "conda", "poetry"), or None: who put it there."""
    return (dist_info_text(name, "INSTALLER", 64) or "").strip() or None


def dist_direct_url(name):
    """The PEP 610 direct_url.json of a dist-info as {"url", "editable", "vcs"}, or None (from an index)."""
    try:
        data = json.loads(dist_info_text(name, "direct_url.json") or "null")
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        return None
    dir_info = data.get("dir_info") if isinstance(data.get("dir_info"), dict) else {}
    vcs = data.get("vcs_info") if isinstance(data.get("vcs_info"), dict) else {}
    return {"url": data["url"], "editable": bool(dir_info.get("editable")), "vcs": vcs.get("vcs")}


#: conda packages that decide who owns torch, bitsandbytes and the CUDA libraries in a conda env.
_CONDA_NAMES = ("pytorch", "pytorch-gpu", "pytorch-cpu", "pytorch-cuda", "torch", "libtorch", "bitsandbytes",
                "cudatoolkit", "cuda-version", "cuda-cudart", "cuda-runtime", "libcublas")


def conda_packages():
    """{name: version} of the conda packages in this prefix's conda-meta/ that own a patient (file names
    only: ``pytorch-2.5.1-py3.11_cuda12.1_cudnn9.1.0_0.json``), or {} outside conda."""
    found = {}
    for entry in list_dir(os.path.join(sys.prefix, "conda-meta")):
        if not entry.endswith(".json"):
            continue
        parts = entry[: -len(".json")].rsplit("-", 2)
        if len(parts) == 3 and parts[0] in _CONDA_NAMES:
            found[parts[0]] = parts[1]
    return found


def pip_available():
    """Whether ``python -m pip`` can run here: uv's environments have no pip unless asked for one."""
    return importlib.util.find_spec("pip") is not None


def venv_tool():
    """What made this virtual environment, from its pyvenv.cfg ("uv", "virtualenv", "venv"), or None."""
    try:
        with open(os.path.join(sys.prefix, "pyvenv.cfg"), "r", encoding="utf-8", errors="replace") as handle:
            keys = [line.split("=", 1)[0].strip().lower() for line in handle if "=" in line]
    except OSError:
        return None
    for tool in ("uv", "virtualenv"):
        if tool in keys:
            return tool
    return "venv"


def package_dir(name):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        return None
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("namespace", "built-in", "frozen"):
        return os.path.dirname(spec.origin)
    locations = list(spec.submodule_search_locations or [])
    return locations[0] if locations else None


def list_dir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def literal_assignments(path, names):
    """Module-level NAME = <literal> assignments, read with ast (never executed)."""
    found = {}
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return found
    for node in tree.body:
        targets, value = [], None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name) and target.id in names:
                try:
                    found[target.id] = ast.literal_eval(value)
                except ValueError:
                    pass
    return found


def requirement_specs(meta):
    return [line for line in (meta or {}).get("Requires-Dist", []) if "extra ==" not in line]


def site_dirs():
    dirs = []
    try:
        dirs.extend(site.getsitepackages())
    except Exception:
        pass
    try:
        dirs.append(site.getusersitepackages())
    except Exception:
        pass
    for entry in sys.path:
        if entry and entry.endswith(("site-packages", "dist-packages")):
            dirs.append(entry)
    seen, unique = set(), []
    for d in dirs:
        if d not in seen and os.path.isdir(d):
            seen.add(d)
            unique.append(d)
    return unique


def nvidia_wheels(sites):
    wheels = []
    for base in sites:
        versions = {}
        for entry in list_dir(base):
            match = re.match(r"^(nvidia_[A-Za-z0-9_]+?)-([^-]+)\.dist-info$", entry)
            if match:
                versions[match.group(1).lower()] = match.group(2)
        root = os.path.join(base, "nvidia")
        for sub in list_dir(root):
            lib_dir = None
            for candidate in ("lib", "bin", os.path.join("lib", "x86_64-linux-gnu")):
                if os.path.isdir(os.path.join(root, sub, candidate)):
                    lib_dir = os.path.join(root, sub, candidate)
                    break
            if lib_dir is None:
                continue
            version = None
            for dist, ver in versions.items():
                if dist.startswith("nvidia_" + sub.lower()):
                    version = ver
                    break
            wheels.append({
                "name": "nvidia/" + sub,
                "version": version,
                "lib_dir": lib_dir,
                "libraries": [f for f in list_dir(lib_dir) if ".so" in f or f.endswith(".dll")],
            })
    return wheels


def torch_facts(sites):
    location = package_dir("torch")
    if location is None:
        return {"installed": False}
    values = literal_assignments(os.path.join(location, "version.py"),
                                 {"__version__", "cuda", "hip", "xpu", "git_version"})
    lib_dir = os.path.join(location, "lib")
    lib_files = [f for f in list_dir(lib_dir)
                 if any(hint in f.lower() for hint in _TORCH_LIB_HINTS)]
    facts = {
        "installed": True,
        "version": values.get("__version__") or dist_version("torch"),
        "cuda": values.get("cuda"),
        "hip": values.get("hip"),
        "xpu": values.get("xpu"),
        "location": location,
        "lib_dir": lib_dir if os.path.isdir(lib_dir) else None,
        "lib_files": lib_files,
        "nvidia_wheels": nvidia_wheels(sites),
        "installer": dist_installer("torch"),
        "direct_url": guarded(dist_direct_url, "torch"),
    }
    if not values:
        facts["error"] = "torch/version.py is missing or unreadable"
    return facts


def bnb_facts():
    location = package_dir("bitsandbytes")
    if location is None:
        return {"installed": False}
    version = dist_version("bitsandbytes")
    meta = dist_metadata("bitsandbytes")
    if version is None:
        init = literal_assignments(os.path.join(location, "__init__.py"), {"__version__"})
        version = init.get("__version__")
    torch_spec = None
    for line in requirement_specs(meta):
        match = re.match(r"^\s*torch\s*(\(?[^;]*\)?)", line)
        if match and not line.strip().startswith("torchvision"):
            torch_spec = match.group(1).strip().strip("()") or None
    entries = list_dir(location)
    wheel_tag = None
    dist = distributions().get("bitsandbytes")
    if dist and dist[1].endswith("METADATA"):
        try:
            with open(os.path.join(os.path.dirname(dist[1]), "WHEEL"), "r", encoding="utf-8", errors="replace") as handle:
                tags = [line.split(":", 1)[1].strip() for line in handle if line.startswith("Tag:")]
            wheel_tag = ".".join(tags) or None
        except OSError:
            pass
    facts = {
        "wheel_tag": wheel_tag,
        "installed": True,
        "version": version,
        "location": location,
        "has_metadata": meta is not None,
        "requires_python": (meta.get("Requires-Python") or [None])[0] if meta is not None else None,
        "requires_torch": torch_spec,
        "native_libraries": [e for e in entries if e.startswith("libbitsandbytes")],
        "legacy_cuda_setup": os.path.isdir(os.path.join(location, "cuda_setup")),
        "record": guarded(package_record, location),
        "installer": dist_installer("bitsandbytes"),
    }
    facts.update(bnb_install_origin(location))
    return facts


def bnb_install_origin(location):
    """How bitsandbytes was installed: {"dist_format": wheel | dist-info | egg | egg-info | None,
    "direct_url": the PEP 610 url (written only for an install from a path or URL, never from an index)}."""
    dist = distributions().get("bitsandbytes")
    parts = os.path.normpath(location).split(os.sep)
    eggs = [i for i, part in enumerate(parts[:-1]) if part.endswith(".egg")]
    if eggs:
        egg_info = os.path.join(os.sep.join(parts[: eggs[-1] + 1]) or os.sep, "EGG-INFO", "PKG-INFO")
        found = {"dist_format": "egg", "direct_url": None, "has_metadata": os.path.isfile(egg_info)}
        try:  # the egg's own version: a dist-info elsewhere on sys.path belongs to another install
            with open(egg_info, "r", encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Version:"):
                        found["version"] = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        return found
    if not dist:
        return {"dist_format": None, "direct_url": None}
    folder = os.path.dirname(dist[1])
    if not dist[1].endswith("METADATA"):
        return {"dist_format": "egg-info", "direct_url": None}
    url = None
    try:
        with open(os.path.join(folder, "direct_url.json"), "r", encoding="utf-8", errors="replace") as handle:
            data = json.load(handle)
        url = data.get("url") if isinstance(data, dict) and isinstance(data.get("url"), str) else None
    except (OSError, ValueError):
        pass
    kind = "wheel" if os.path.isfile(os.path.join(folder, "WHEEL")) else "dist-info"
    return {"dist_format": kind, "direct_url": url}


def guarded(function, *args):
    """An optional fact: what ``function`` returns, or None when it fails (the rest of the answer stands)."""
    try:
        return function(*args)
    except Exception:
        return None


def transformers_bnb_minimum():
    """The minimum bitsandbytes the installed transformers accepts, read from its own source: the
    module-level constant in utils/import_utils.py, parsed with ast line by line (the file is large,
    so it is scanned as text, bounded, and never imported). None when transformers is missing."""
    location = package_dir("transformers")
    if location is None:
        return None
    path = os.path.join(location, *TRANSFORMERS_BNB_FILE)
    found = {"package": "transformers", "minimum": None, "constant": None, "file": path, "error": None}
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as handle:
            text = handle.read(SOURCE_LIMIT)
    except OSError as exc:
        found["error"] = "%s: %s" % (type(exc).__name__, exc)
        return found
    pattern = r"^%s\s*(?::[^=\n]*)?=[^\n]*$" % TRANSFORMERS_BNB_CONSTANT
    for match in re.finditer(pattern, text, re.M):
        try:
            node = ast.parse(match.group(0)).body[0]
            value = ast.literal_eval(node.value)
        except (SyntaxError, ValueError, AttributeError, IndexError):
            continue
        if isinstance(value, str) and re.match(r"^\d+(\.\d+)*", value):
            found["minimum"], found["constant"] = value, TRANSFORMERS_BNB_CONSTANT
            return found
    return found


def record_paths(dist_dir, base):
    """The absolute, normalised paths a dist-info's RECORD lists (bounded), or None without a RECORD."""
    paths = set()
    try:
        with open(os.path.join(dist_dir, "RECORD"), "r", encoding="utf-8", errors="replace", newline="") as handle:
            for number, row in enumerate(csv.reader(handle)):
                if number >= RECORD_LINE_LIMIT:
                    break
                if row:
                    paths.add(os.path.normcase(os.path.normpath(os.path.join(base, row[0]))))
    except (OSError, csv.Error):
        return None
    return paths


def _claims_package(dist_name, dist_dir, package):
    """A dist-info that may own the package folder: bitsandbytes in its name, or in top_level.txt."""
    if package in normalise(dist_name):
        return True
    try:
        with open(os.path.join(dist_dir, "top_level.txt"), "r", encoding="utf-8", errors="replace") as handle:
            return package in [line.strip() for line in handle.read(65536).splitlines()]
    except OSError:
        return False


def package_files(location):
    """(relative paths with "/", truncated) of the package folder's files, __pycache__ left out. The
    folders are read lazily (scandir) and the walk stops at RECORD_FILE_LIMIT files, so a huge
    folder costs no more than the limit."""
    files, pending = [], [""]
    while pending:
        relative = pending.pop()
        try:
            entries = os.scandir(os.path.join(location, relative) if relative else location)
        except OSError:
            continue
        with entries:
            for entry in entries:
                name = relative + "/" + entry.name if relative else entry.name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if entry.name != "__pycache__":
                        pending.append(name)
                elif not entry.name.endswith((".pyc", ".pyo")):
                    if len(files) >= RECORD_FILE_LIMIT:
                        return files, True
                    files.append(name)
    return files, False


def package_record(location, package="bitsandbytes"):
    """The package folder against the RECORD of every distribution in its site folder that claims it."""
    base = os.path.dirname(location)
    claims, listed, newest = [], set(), None
    prefix = os.path.normcase(os.path.normpath(location)) + os.sep
    for entry in list_dir(base):
        if not entry.endswith(".dist-info"):
            continue
        dist_dir = os.path.join(base, entry)
        stem = entry[: -len(".dist-info")]
        name, _, rest = stem.partition("-")
        if not _claims_package(name, dist_dir, package):
            continue
        paths = record_paths(dist_dir, base)
        inside = [p for p in paths or () if p.startswith(prefix) and "__pycache__" not in p]
        if not inside:
            continue
        listed.update(inside)
        try:
            written = os.path.getmtime(os.path.join(dist_dir, "RECORD"))
        except OSError:
            written = 0.0
        claims.append({"name": name, "version": rest.split("-")[0] or None, "metadata_dir": dist_dir,
                       "files": len(inside)})
        if newest is None or written > newest[0]:
            newest = (written, dist_dir)
    record = {"claims": claims, "compared_with": newest[1] if newest else None, "files": 0, "unlisted": [],
              "unlisted_count": 0, "truncated": False, "skipped": None}
    if not claims:
        record["skipped"] = "no distribution's RECORD lists files in this folder (an editable or source install)"
        return record
    files, truncated = package_files(location)
    # Compared as relative "/" paths: normalising every file of a large folder would cost more than the walk.
    relative = set(p[len(prefix):].replace(os.sep, "/") for p in listed)
    fold = os.path.normcase("A") == "a"  # Windows compares names case-insensitively
    unlisted = [f for f in files if (f.lower() if fold else f) not in relative]
    unlisted.sort(key=lambda f: (not f.endswith(_MODULE_SUFFIXES), f))
    record.update(files=len(files), unlisted=unlisted[:UNLISTED_SHOWN], unlisted_count=len(unlisted),
                  truncated=truncated)
    return record


def main():
    sites = site_dirs()
    facts = {
        "script_version": SCRIPT_VERSION,
        "executable": sys.executable,
        "version": "%d.%d.%d" % sys.version_info[:3],
        "implementation": sys.implementation.name,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "platform_tag": sysconfig.get_platform(),
        "site_packages": sites,
        "torch": torch_facts(sites),
        "bitsandbytes": bnb_facts(),
        "conda_packages": guarded(conda_packages) or {},
        "pip_available": guarded(pip_available),
        "venv_tool": guarded(venv_tool),
        "packages": {name: dist_version(name) for name in OTHER_PACKAGES},
        "transformers_bnb_minimum": guarded(transformers_bnb_minimum),
    }
    sys.stdout.write(json.dumps(facts))


if __name__ == "__main__":
    main()
