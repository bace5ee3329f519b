"""Add bytecode to the ``pyspark.zip`` that Spark puts first on its Python processes' path.

Spark starts its Python processes with ``PYTHONPATH=$SPARK_HOME/python/lib/pyspark.zip:...``,
so they import pyspark from that zip, which the pyspark wheel ships as sources only. Python
never writes bytecode into a zip: every Python process Spark starts as a fresh interpreter
(not forked from its worker daemon) compiles pyspark's modules again, about 0.5 s of CPU on
each start. The ``lagless-kafka`` stream source runs its driver side in such a process, one per
query start (measured: 0.77-0.86 s CPU to import the source runner from the zip, 0.25-0.31 s
from the installed, compiled package).

This adds ``module.pyc`` beside each ``module.py`` in the zip (unchecked hash-based pycs, the
layout zipimport looks for first), for this interpreter's version. Another Python version
finds a bytecode it cannot use and compiles from the source, as before. Idempotent: a zip that
already holds bytecode is left alone. Run by ``make`` (the venv's ``.installed`` step).

Usage: python scripts/compile_pyspark_zip.py
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import warnings
import zipfile
from pathlib import Path

try:  # CPython's own helper for hash-based pycs (private: present in 3.7-3.13)
    from importlib._bootstrap_external import _code_to_hash_pyc  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - another interpreter: Spark compiles as before
    _code_to_hash_pyc = None


def pyspark_zip() -> Path | None:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "python" / "lib" / "pyspark.zip"
    return path if path.is_file() else None


def add_bytecode(archive: Path) -> int:
    """Rewrite ``archive`` with a ``.pyc`` beside each ``.py``; the number added."""
    with zipfile.ZipFile(archive) as source:
        names = set(source.namelist())
        if any(n.endswith(".pyc") for n in names):
            return 0
        fd, tmp = tempfile.mkstemp(dir=archive.parent, suffix=".zip.tmp")
        os.close(fd)
        added = 0
        try:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as target:
                for info in source.infolist():
                    data = source.read(info)
                    target.writestr(info, data)
                    if not info.filename.endswith(".py") or info.filename + "c" in names:
                        continue
                    try:
                        with warnings.catch_warnings():  # pyspark's own tests have some
                            warnings.simplefilter("ignore")
                            code = compile(
                                data, f"{archive}/{info.filename}", "exec", dont_inherit=True
                            )
                    except SyntaxError:
                        continue  # left to be compiled (and fail) where it is imported
                    pyc = _code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False)
                    target.writestr(info.filename + "c", bytes(pyc))
                    added += 1
            os.replace(tmp, archive)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return added


def main() -> None:
    if _code_to_hash_pyc is None:
        print("this Python cannot write hash-based bytecode: pyspark.zip left as it is")
        return
    archive = pyspark_zip()
    if archive is None:
        print("pyspark.zip not found: nothing to do")
        return
    added = add_bytecode(archive)
    print(f"{archive}: {added} bytecode files added" if added else f"{archive}: has bytecode")


if __name__ == "__main__":
    main()
