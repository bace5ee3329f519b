"""Fresh virtual environments with lagless installed from its wheel, as a user would.

Used by bench/install_size.py and tests/deploy/test_lean_install.py. Dependencies come from
the package index pip is configured with, pinned by constraints.txt (the tested versions).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONSTRAINTS = REPO / "constraints.txt"
NOT_COUNTED = ("pip", "setuptools", "_distutils_hack", "distutils-precedence.pth", "pkg_resources")


def build_wheel(out: Path) -> Path:
    """lagless's wheel (with its C reader where a compiler is found) in ``out``."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out),
         str(REPO)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return next(out.glob("lagless-*.whl"))


def make_venv(where: Path, wheel: Path, extras: str = "") -> Path:
    """A fresh venv at ``where`` with ``wheel`` (``extras`` e.g. ``"[all]"``); its bin dir."""
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    bin_dir = where / "bin"
    env = {k: v for k, v in os.environ.items() if k != "PIP_REQUIRE_VIRTUALENV"}
    subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "-c", str(CONSTRAINTS),
         f"lagless{extras} @ {wheel.as_uri()}"],
        check=True, capture_output=True, text=True, env=env,
    )  # fmt: skip
    return bin_dir


def site_packages(bin_dir: Path) -> Path:
    out = subprocess.run(
        [str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return Path(out.stdout.strip())


def installed_bytes(bin_dir: Path) -> int:
    """Bytes under site-packages, pip and setuptools (and their dist-info) not counted."""
    total = 0
    for entry in site_packages(bin_dir).iterdir():
        name = entry.name.split("-")[0].lower()
        if name in NOT_COUNTED or entry.name in NOT_COUNTED:
            continue
        paths = [entry] if entry.is_file() else [p for p in entry.rglob("*") if p.is_file()]
        total += sum(p.stat().st_size for p in paths if not p.is_symlink())
    return total
