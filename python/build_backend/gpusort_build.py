"""gpusort's PEP 517 build backend: what pip runs for `pip install ./python` and
`pip wheel ./python`. Standard library only, so that nothing has to be downloaded to build.

It configures the repository's CMake project (the parent of python/) with the Python module
on, builds the target _gpusort, installs CMake's component `python` into a staging folder
and zips the wheel from python/gpusort/*.py and that module. The version is the one in the
top-level CMakeLists.txt's project(); the rest of the metadata is pyproject.toml's [project].

Config settings (pip --config-settings KEY=VALUE, or -C KEY=VALUE with pip >= 23.1):
  build-dir=PATH            build in PATH (absolute: pip runs this in python/); a CMake tree
                            already configured there (the one scripts/test.sh builds) is
                            reused, so nothing recompiles
  cuda-architectures=LIST   CMAKE_CUDA_ARCHITECTURES, e.g. 90 or "80;90" or native (also the
                            environment's GPUSORT_CUDA_ARCHITECTURES); by default the project's:
                            the GPUs nvidia-smi finds, else (or with
                            cmake.define.GPUSORT_FAT_BUILD=ON) sm_80, sm_90 and newer major
                            architectures, with PTX
  cmake.define.NAME=VALUE   any other CMake cache variable (-DNAME=VALUE)
Environment: CMAKE_BUILD_PARALLEL_LEVEL (jobs; default: every core), CMAKE_ARGS (more CMake
arguments for the configure step), CUDACXX (nvcc, if it is not on PATH nor in
/usr/local/cuda/bin).
"""

import base64
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # python/
_ROOT = _PACKAGE_DIR.parent  # the CMake project
_MIN_CMAKE = (3, 25)
_SETTINGS = ("build-dir", "cuda-architectures")


class _Failure(Exception):
    pass


def _fail(message):
    raise _Failure(message)


def _report_failures(hook):
    """Turns a _Failure into one clear message at the end of the output (pip shows the
    output of a failed build) instead of a traceback."""

    def wrapped(*args, **kwargs):
        try:
            return hook(*args, **kwargs)
        except _Failure as failure:
            print(f"\ngpusort build: ERROR: {failure}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None

    wrapped.__name__ = hook.__name__
    wrapped.__doc__ = hook.__doc__
    return wrapped


def _log(message):
    print(f"gpusort build: {message}", flush=True)


# --- metadata ------------------------------------------------------------------------------


def _read_toml(path):
    text = path.read_text(encoding="utf-8")
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        return _read_toml_subset(text)
    return tomllib.loads(text)


def _strip_comment(line):
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == "\\" and quote == '"':
                continue
            if c == quote and (quote == "'" or i == 0 or line[i - 1] != "\\"):
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#":
            return line[:i]
    return line


def _read_toml_subset(text):
    """Before Python 3.11 (no tomllib): the TOML pyproject.toml uses, that is tables, and
    keys whose values are strings, booleans, numbers or arrays of strings, on one line or
    an array over several."""
    import ast

    data = {}
    table = data
    lines = iter(text.splitlines())
    for raw in lines:
        line = _strip_comment(raw).strip()
        if not line:
            continue
        if line.startswith("["):
            table = data
            for part in line.strip("[]").split("."):
                table = table.setdefault(part.strip().strip('"'), {})
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        while True:
            literal = {"true": "True", "false": "False"}.get(value, value)
            try:
                table[key.strip().strip('"')] = ast.literal_eval(literal)
                break
            except (SyntaxError, ValueError):
                try:
                    value += " " + _strip_comment(next(lines)).strip()
                except StopIteration:
                    _fail(f"cannot read pyproject.toml's value of {key.strip()}")
    return data


def _version():
    """The version in the top-level CMakeLists.txt: project(gpusort VERSION x.y.z ...)."""
    cmakelists = _ROOT / "CMakeLists.txt"
    text = cmakelists.read_text(encoding="utf-8") if cmakelists.is_file() else ""
    match = re.search(r"project\s*\(\s*gpusort\s+VERSION\s+([0-9]+(?:\.[0-9]+)*)", text)
    if not match:
        _fail(
            f"no project(gpusort VERSION ...) in {cmakelists}: python/ builds from within "
            "the gpusort repository (pip >= 21.3 builds it in place)"
        )
    return match.group(1)


def _project():
    project = _read_toml(_PACKAGE_DIR / "pyproject.toml").get("project", {})
    if "version" in project:
        _fail("pyproject.toml sets a version: the version is the top-level CMakeLists.txt's")
    return project


def _normalized_name(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_text(project, version):
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {version}",
    ]
    if project.get("description"):
        lines.append(f"Summary: {project['description']}")
    license = project.get("license")  # an SPDX expression, or PEP 621's {text = ...}
    if isinstance(license, dict):
        license = license.get("text")
    if license:
        lines.append(f"License: {license}")
    for classifier in project.get("classifiers", []):
        lines.append(f"Classifier: {classifier}")
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    for requirement in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {requirement}")
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for requirement in requirements:
            marker = f'extra == "{extra}"'
            if ";" in requirement:
                req, _, rest = requirement.partition(";")
                lines.append(f"Requires-Dist: {req.strip()}; ({rest.strip()}) and {marker}")
            else:
                lines.append(f"Requires-Dist: {requirement}; {marker}")
    readme = project.get("readme")
    body = ""
    if isinstance(readme, str) and (_PACKAGE_DIR / readme).is_file():
        kind = "text/markdown" if readme.lower().endswith(".md") else "text/plain"
        lines.append(f"Description-Content-Type: {kind}")
        body = (_PACKAGE_DIR / readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + body


# --- the wheel's tag -----------------------------------------------------------------------


def _wheel_tag():
    """interpreter-abi-platform of this interpreter, e.g. cp311-cp311-linux_x86_64."""
    version = f"{sys.version_info[0]}{sys.version_info[1]}"
    soabi = sysconfig.get_config_var("SOABI") or ""
    parts = soabi.split("-")
    if sys.implementation.name == "cpython":
        interpreter = f"cp{version}"
        abi = f"cp{parts[1]}" if soabi.startswith("cpython-") and len(parts) > 1 else interpreter
    elif sys.implementation.name == "pypy":
        interpreter = f"pp{version}"
        abi = "_".join(parts[:2]) if len(parts) >= 2 else "none"
    else:
        interpreter = f"{sys.implementation.name[:2]}{version}"
        abi = re.sub(r"[-.]", "_", soabi) or "none"
    platform = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return f"{interpreter}-{abi}-{platform}"


def _wheel_text(tag):
    return (
        "Wheel-Version: 1.0\n"
        "Generator: gpusort_build (python/build_backend)\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n"
    )


# --- settings and tools --------------------------------------------------------------------


def _settings(config_settings):
    settings = {}
    for key, value in (config_settings or {}).items():
        if isinstance(value, list):
            value = value[-1]
        key = key.strip()
        if not key.startswith("cmake.define."):
            key = key.replace("_", "-")
            if key not in _SETTINGS:
                _fail(
                    f"unknown config setting {key!r}: known are {', '.join(_SETTINGS)} and "
                    "cmake.define.NAME"
                )
        settings[key] = str(value)
    return settings


def _tool_env():
    """The environment of the programs this backend runs: without the folder pip's build
    isolation puts on PYTHONPATH, which hides the installed packages from every interpreter.
    CMake installed by pip is a Python script (`from cmake import cmake`) that fails there, and
    the GPU hosts' CMake is that one: `pip install ./python` asked an index for CMake."""
    env = dict(os.environ)
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and "pip-build-env" not in p]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        env.pop("PYTHONPATH", None)
    return env


def _cmake():
    cmake = shutil.which("cmake")
    if not cmake:
        return None, None
    try:
        out = subprocess.run([cmake, "--version"], capture_output=True, text=True,
                             env=_tool_env()).stdout
    except OSError:
        return None, None
    match = re.search(r"version\s+(\d+)\.(\d+)", out)
    return cmake, (int(match.group(1)), int(match.group(2))) if match else None


def _nvcc():
    """nvcc: CUDACXX, else PATH, else the toolkit's usual places."""
    candidates = [os.environ.get("CUDACXX"), shutil.which("nvcc")]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "bin", "nvcc"))
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _pybind11_cmake_dir():
    try:
        import pybind11
    except ImportError:
        # Under pip's build isolation this interpreter's own packages are hidden; ask it
        # again without the isolation's PYTHONPATH.
        try:
            out = subprocess.run(
                [sys.executable, "-c", "import pybind11; print(pybind11.get_cmake_dir())"],
                capture_output=True, text=True, timeout=60, env=_tool_env(),
            )
        except (OSError, subprocess.SubprocessError):
            return None
        found = out.stdout.strip()
        return found if out.returncode == 0 and found and Path(found).is_dir() else None
    return pybind11.get_cmake_dir()


def _pybind11_found():
    if _pybind11_cmake_dir() or os.environ.get("pybind11_DIR"):
        return True
    prefixes = ["/usr", "/usr/local", sys.prefix, sys.base_prefix]
    return any(
        Path(prefix, sub, "cmake", "pybind11").is_dir()
        for prefix in prefixes
        for sub in ("lib", "lib64", "share")
    )


def _jobs():
    level = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "").strip()
    if level.isdigit() and int(level) > 0:
        return int(level)
    try:
        return len(os.sched_getaffinity(0)) or 1  # the cores this process may use (taskset)
    except AttributeError:
        return os.cpu_count() or 1


def _cache(build_dir):
    """The CMakeCache.txt of build_dir as a dict, or None where there is none."""
    path = Path(build_dir) / "CMakeCache.txt"
    if not path.is_file():
        return None
    cache = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = re.match(r"^([A-Za-z0-9_.+-]+):[A-Z]+=(.*)$", line)
        if match:
            cache[match.group(1)] = match.group(2)
    return cache


def _same_python(other):
    """Whether interpreter `other` builds modules this one imports."""
    if not other:
        return False
    try:
        if os.path.samefile(other, sys.executable):
            return True
        out = subprocess.run(
            [other, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
            capture_output=True, text=True, timeout=60,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return False
    return out == sysconfig.get_config_var("EXT_SUFFIX")


def _run(command, env=None, what=None):
    _log("$ " + " ".join(shlex.quote(str(c)) for c in command))
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        result = subprocess.run([str(c) for c in command], env=env)
    except OSError as error:
        _fail(f"could not run {command[0]}: {error}")
    if result.returncode != 0:
        _fail(f"{what or command[0]} failed (exit code {result.returncode}); see the output above")


# --- the build -----------------------------------------------------------------------------


def _check_tools():
    cmake, version = _cmake()
    if not cmake:
        _fail(
            "CMake was not found: CMake >= 3.25 is needed (Debian 12: apt-get install cmake; "
            "or pip install cmake)"
        )
    if version and version < _MIN_CMAKE:
        _fail(f"CMake {version[0]}.{version[1]} is too old: gpusort needs CMake >= 3.25")
    include = sysconfig.get_paths().get("include")
    if include and not Path(include, "Python.h").is_file():
        _fail(
            f"Python's headers are missing ({include}/Python.h): on Debian or Ubuntu "
            "apt-get install python3-dev"
        )
    return cmake


def _build(settings, staging):
    """Configures and builds the modules, installs them under `staging`; returns their paths
    (_gpusort's first)."""
    cmake = _check_tools()
    env = _tool_env()
    tag = _wheel_tag()

    given_dir = settings.get("build-dir")
    if given_dir:
        build_dir = Path(given_dir).expanduser().resolve()
    else:
        build_dir = _ROOT / "build-py" / tag
    archs = settings.get("cuda-architectures") or os.environ.get("GPUSORT_CUDA_ARCHITECTURES")
    cache = _cache(build_dir)

    args = [f"-D{key[len('cmake.define.'):]}={value}"
            for key, value in settings.items() if key.startswith("cmake.define.")]
    args += shlex.split(os.environ.get("CMAKE_ARGS", ""))
    if archs:
        args.append(f"-DCMAKE_CUDA_ARCHITECTURES={archs}")
    elif not given_dir:
        # This backend's own folder follows the project's default unless told otherwise,
        # even after a build there with -C cuda-architectures=....
        args.append("-UCMAKE_CUDA_ARCHITECTURES")

    if cache is None:
        nvcc = _nvcc()
        if not nvcc:
            _fail(
                "nvcc (the CUDA toolkit's compiler) was not found: install the CUDA toolkit, "
                "then set CUDACXX=/path/to/nvcc or put its bin folder on PATH "
                "(export PATH=/usr/local/cuda/bin:$PATH)"
            )
        env["CUDACXX"] = nvcc
        _log(f"configuring a new CMake build in {build_dir} (nvcc: {nvcc})")
        configure = [cmake, "-S", _ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                     "-DGPUSORT_BUILD_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}",
                     "-DGPUSORT_BUILD_TESTS=OFF", "-DGPUSORT_BUILD_TOOLS=OFF",
                     "-DGPUSORT_BUILD_EXAMPLES=OFF", "-DGPUSORT_BUILD_DIST=OFF"]
        if shutil.which("ninja") and not any(a.startswith("-G") for a in args):
            configure += ["-G", "Ninja"]
        pybind11_dir = _pybind11_cmake_dir()
        if pybind11_dir:
            configure.append(f"-Dpybind11_DIR={pybind11_dir}")
        _run(configure + args, env, "CMake's configure step")
    else:
        source = cache.get("CMAKE_HOME_DIRECTORY") or cache.get("gpusort_SOURCE_DIR")
        if source and Path(source).resolve() != _ROOT.resolve():
            _fail(f"{build_dir} is the CMake build of {source}, not of {_ROOT}")
        python = cache.get("_Python_EXECUTABLE") or cache.get("Python_EXECUTABLE")
        if not _same_python(python):
            args.append(f"-DPython_EXECUTABLE={sys.executable}")
            _log(f"{build_dir} was configured for {python or 'no Python'}: now {sys.executable}")
        if cache.get("GPUSORT_BUILD_PYTHON", "").upper() not in ("ON", "1", "TRUE", "YES"):
            args.append("-DGPUSORT_BUILD_PYTHON=ON")
        if args:
            _log(f"configuring the CMake build in {build_dir} again")
            _run([cmake, "-S", _ROOT, "-B", build_dir] + args, env, "CMake's configure step")
        else:
            _log(f"reusing the CMake build in {build_dir}")

    jobs = _jobs()
    # gpusort.distributed's NCCL path (_gpusort_dist) where the build has gpusort::dist: a
    # reused build that has it, or -C cmake.define.GPUSORT_BUILD_DIST=ON (a new build leaves
    # it out, as it does the tests and tools).
    dist_option = (_cache(build_dir) or {}).get("GPUSORT_BUILD_DIST", "")
    with_dist = dist_option.upper() in ("ON", "1", "TRUE", "YES")
    targets = ["_gpusort"] + (["_gpusort_dist"] if with_dist else [])
    _log(f"building {' and '.join(targets)} with {jobs} jobs (CMAKE_BUILD_PARALLEL_LEVEL sets it)")
    started = time.monotonic()
    _run([cmake, "--build", build_dir, "--target", *targets, "--parallel", str(jobs)], env,
         "the build")
    _log(f"built in {time.monotonic() - started:.0f} s")
    _run([cmake, "--install", build_dir, "--component", "python", "--prefix", staging], env,
         "cmake --install --component python")

    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    modules = sorted(Path(staging, "gpusort").glob("_gpusort*"))
    if not modules:
        _fail(f"the build installed no _gpusort module under {staging}/gpusort")
    module = next((m for m in modules if m.name == "_gpusort" + suffix), None)
    if module is None:
        _fail(
            f"the build made {modules[0].name}, but this Python ({sys.executable}) imports "
            f"_gpusort{suffix}: build with this interpreter (another build-dir)"
        )
    return [module] + [m for m in modules if m.name == "_gpusort_dist" + suffix]


# --- the wheel -----------------------------------------------------------------------------


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def _zip_time():
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        return time.gmtime(max(int(epoch), 315532800))[:6]
    return (1980, 1, 1, 0, 0, 0)


def _package_files():
    """(path in the wheel, file) of the package's Python sources and type stubs (.pyi and the
    py.typed marker, PEP 561)."""
    package = _PACKAGE_DIR / "gpusort"
    files = []
    for path in sorted(package.rglob("*")):
        if (path.is_file() and "__pycache__" not in path.parts
                and (path.suffix in (".py", ".pyi") or path.name == "py.typed")):
            files.append((path.relative_to(_PACKAGE_DIR).as_posix(), path))
    if not files:
        _fail(f"no Python sources in {package}")
    return files


def _write_wheel(path, members, dist_info):
    """members: (path in the wheel, bytes, executable) in order; RECORD is added last."""
    path = Path(path)
    record = []
    date_time = _zip_time()
    tmp = path.with_name(path.name + ".part")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for arcname, data, executable in members:
            info = zipfile.ZipInfo(arcname, date_time=date_time)
            info.external_attr = ((0o755 if executable else 0o644) | 0o100000) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
            record.append(f"{arcname},{_record_hash(data)},{len(data)}")
        record_name = f"{dist_info}/RECORD"
        record.append(f"{record_name},,")
        info = zipfile.ZipInfo(record_name, date_time=date_time)
        info.external_attr = (0o644 | 0o100000) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        wheel.writestr(info, "\n".join(record) + "\n")
    os.replace(tmp, path)


def _dist_info_files():
    """The .dist-info folder's name, its files, and the wheel's file name."""
    project = _project()
    version = _version()
    base = f"{_normalized_name(project['name'])}-{version}"
    files = {
        "METADATA": _metadata_text(project, version).encode("utf-8"),
        "WHEEL": _wheel_text(_wheel_tag()).encode("utf-8"),
        "LICENSE": (_ROOT / "LICENSE").read_bytes(),
    }
    return f"{base}.dist-info", files, f"{base}-{_wheel_tag()}.whl"


# --- PEP 517 hooks -------------------------------------------------------------------------


@_report_failures
def get_requires_for_build_wheel(config_settings=None):
    """pybind11 from the index only where none is here (importable, or CMake's config of
    Debian's pybind11-dev); CMake too where it is missing or older than 3.25."""
    requires = []
    if not _pybind11_found():
        requires.append("pybind11>=2.10")
    _, version = _cmake()
    if version is None or version < _MIN_CMAKE:
        requires.append("cmake>=3.25")
    return requires


@_report_failures
def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _settings(config_settings)
    dist_info, files, _ = _dist_info_files()
    folder = Path(metadata_directory) / dist_info
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return dist_info


@_report_failures
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    settings = _settings(config_settings)
    dist_info, files, name = _dist_info_files()
    staging = tempfile.mkdtemp(prefix="gpusort-wheel-")
    try:
        modules = _build(settings, staging)
        members = [(arcname, path.read_bytes(), False) for arcname, path in _package_files()]
        members += [(f"gpusort/{module.name}", module.read_bytes(), True) for module in modules]
        members += [(f"{dist_info}/{name}", data, False) for name, data in files.items()]
        Path(wheel_directory).mkdir(parents=True, exist_ok=True)
        _write_wheel(Path(wheel_directory) / name, members, dist_info)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _log(f"wrote {name}")
    return name


@_report_failures
def get_requires_for_build_sdist(config_settings=None):
    return []


_SDIST_SKIP = {"__pycache__", ".pytest_cache"}


@_report_failures
def build_sdist(sdist_directory, config_settings=None):
    """The CMake project that builds the module, laid out as in the repository with the
    package's pyproject.toml at the top: CMakeLists.txt, cmake/, include/, src/, python/
    (the tests, tools, examples and benchmarks are not needed to build the module)."""
    import io
    import tarfile

    project = _project()
    version = _version()
    base = f"{_normalized_name(project['name'])}-{version}"
    pyproject = (_PACKAGE_DIR / "pyproject.toml").read_text(encoding="utf-8")
    pyproject, count = re.subn(
        r'^backend-path\s*=.*$', 'backend-path = ["python/build_backend"]', pyproject, flags=re.M
    )
    if count != 1:
        _fail("pyproject.toml has no backend-path line")
    pkg_info = _metadata_text(project, version)
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800") or 315532800)

    def add_bytes(tar, arcname, data):
        info = tarfile.TarInfo(f"{base}/{arcname}")
        info.size = len(data)
        info.mtime = mtime
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))

    def add_tree(tar, relative):
        path = _ROOT / relative
        if path.is_file():
            add_bytes(tar, relative, path.read_bytes())
            return
        for child in sorted(path.iterdir()):
            if child.name in _SDIST_SKIP or child.suffix in (".pyc", ".o", ".so"):
                continue
            add_tree(tar, f"{relative}/{child.name}")

    Path(sdist_directory).mkdir(parents=True, exist_ok=True)
    name = f"{base}.tar.gz"
    with tarfile.open(Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        add_bytes(tar, "pyproject.toml", pyproject.encode("utf-8"))
        add_bytes(tar, "PKG-INFO", pkg_info.encode("utf-8"))
        for relative in ("LICENSE", "CMakeLists.txt", "cmake", "include", "src", "python"):
            add_tree(tar, relative)
    _log(f"wrote {name}")
    return name
