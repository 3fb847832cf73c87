"""How an exported int8/SLB model imports its deploy layers (``sporeling_gs_runtime.py``).

The functions here are copied verbatim into every exported description (standard library
only: the export loads with ``sporeling-core-runtime`` alone). Numba finds a kernel's
cache by the directory of its source file, so a runtime imported from each export folder
compiled every kernel again for every folder (~10 s). Instead the verified bytes of the
folder's runtime file are run under the path of one shared per-user copy,
``<cache>/<sha256>/sporeling_gs_runtime.py`` (written once, same bytes and mtime), and every
export of the same runtime shares one Numba cache. ``<cache>`` is
``$SPORELING_GS_RUNTIME_CACHE``, else ``$XDG_CACHE_HOME/sporeling/gs-runtime``, else
``~/.cache/sporeling/gs-runtime``. The runtime file's hash is checked against the one the
description records; a shared directory that is not the user's own (another owner, or
writable by group/others) or cannot be written is not used: the runtime is then imported
from the export folder, with a ``RuntimeWarning`` saying why.
"""

from __future__ import annotations

__all__ = ["LOADER_FUNCTIONS"]


def _gs_runtime_cache_root():
    """The per-user folder that holds the shared runtime copies."""
    import os

    root = os.environ.get("SPORELING_GS_RUNTIME_CACHE")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "sporeling", "gs-runtime")
    return os.path.abspath(root)


def _gs_private_dir(path):
    """Create ``path`` (mode 0700) if absent; raise PermissionError unless it is a real
    directory owned by this user and not writable by group or others."""
    import os
    import stat

    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path} is not a directory")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to user id {st.st_uid}, not {os.getuid()}")
    if st.st_mode & 0o022:
        raise PermissionError(f"{path} is writable by group or others (mode {st.st_mode:o})")


def _gs_shared_runtime_path(source, data, digest):
    """The shared copy of the runtime file ``source`` (bytes ``data``, sha256 ``digest``),
    created once with the same bytes and mtime; raises OSError when it cannot be used."""
    import os
    import stat
    import tempfile

    folder = os.path.join(_gs_runtime_cache_root(), digest)
    _gs_private_dir(os.path.dirname(folder))
    _gs_private_dir(folder)
    target = os.path.join(folder, os.path.basename(source))
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISREG(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            raise PermissionError(f"{target} is not a regular file of this user")
        with open(target, "rb") as fh:
            if fh.read() == data:
                return target
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        mtime = os.stat(source).st_mtime_ns
        os.utime(tmp, ns=(mtime, mtime))
        if st is None:
            try:  # first writer wins: a racing process keeps the same file (and mtime)
                os.link(tmp, target)
            except FileExistsError:
                return _gs_shared_runtime_path(source, data, digest)
            except OSError:
                os.replace(tmp, target)
        else:  # a damaged copy: replace it
            os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _gs_load_runtime(here, file_name, expected_sha256):
    """The deploy-layer module of the export in folder ``here``, its file checked against
    ``expected_sha256``; one module per runtime content in each process."""
    import hashlib
    import importlib.util
    import os
    import sys
    import warnings

    source = os.path.join(here, file_name)
    with open(source, "rb") as fh:
        data = fh.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected_sha256:
        raise ImportError(
            f"{source}: sha256 {digest} does not match the export's {expected_sha256}; "
            "the runtime file was changed or belongs to another export"
        )
    name = "sporeling_gs_runtime_" + digest[:16]
    if name in sys.modules:
        return sys.modules[name]
    try:
        path = _gs_shared_runtime_path(source, data, digest)
    except OSError as err:
        warnings.warn(
            f"exported model: not using the shared runtime cache ({err}); importing "
            f"{source} from the export folder, so its Numba kernels compile for this folder",
            RuntimeWarning,
            stacklevel=2,
        )
        path = source
    # run the verified bytes under the shared path (Numba's cache follows code.co_filename)
    spec = importlib.util.spec_from_loader(name, loader=None, origin=path)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(compile(data, path, "exec", dont_inherit=True), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


LOADER_FUNCTIONS = (
    _gs_runtime_cache_root,
    _gs_private_dir,
    _gs_shared_runtime_path,
    _gs_load_runtime,
)
