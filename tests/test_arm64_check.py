"""termux/arm64-check.sh without emulating anything: usage errors, and the one-line refusal
(exit 3) when this machine cannot emulate aarch64, before anything is changed. Stub commands
(id, uname, mount, umount, debootstrap, chroot) come first on PATH; the arm64 tree, the lock and
the binfmt_misc folder point into tmp_path. The real run is `sudo termux/arm64-check.sh`; its
result is bench/results/arm64.md."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "termux" / "arm64-check.sh"
BASH = shutil.which("bash")

pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

STUB = """#!/usr/bin/env bash
name="$(basename "$0")"
printf '%s %s\\n' "$name" "$*" >> "$STUB_LOG"
case "$name" in
id) echo "${STUB_UID:-0}" ;;
uname) if [[ "$1" == -m ]]; then echo "${STUB_MACHINE:-x86_64}"; else echo Linux; fi ;;
mount) echo "mount: $4: permission denied." >&2; exit 32 ;;
qemu-aarch64-static) echo "qemu-aarch64 version 7.2.0 (stub)" ;;
esac
exit 0
"""


@pytest.fixture
def env(tmp_path):
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name in ("id", "uname", "mount", "umount", "debootstrap", "chroot", "qemu-aarch64-static"):
        (stubs / name).write_text(STUB)
        (stubs / name).chmod(0o755)
    flock = shutil.which("flock")
    if flock:
        (stubs / "flock").symlink_to(flock)
    e = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "STUB_LOG": str(tmp_path / "calls"),
         "KGSEARCH_ARM64_ROOTFS": str(tmp_path / "cache" / "arm64-rootfs"),
         "KGSEARCH_BINFMT_DIR": str(tmp_path / "binfmt"), "KGSEARCH_QEMU": str(stubs / "qemu-aarch64-static"),
         "TMPDIR": str(tmp_path)}
    return tmp_path, e


def run(env, *args, **extra):
    tmp, e = env
    return subprocess.run([BASH, str(SCRIPT), "--host-python", sys.executable, *args], env={**e, **extra},
                          capture_output=True, text=True, timeout=60)


def calls(env) -> list[str]:
    p = env[0] / "calls"
    return p.read_text().splitlines() if p.exists() else []


def test_help(env):
    r = run(env, "--help")
    assert r.returncode == 0
    assert r.stdout.startswith("Usage: sudo termux/arm64-check.sh")
    assert f"now {env[0] / 'cache' / 'arm64-rootfs'}" in r.stdout        # the cache location is overridable


@pytest.mark.parametrize("args,msg", [
    (["--runs", "0"], "--runs must be a whole number of at least 1, not '0'"),
    (["--bogus"], "unknown option '--bogus'"),
    (["--rootfs"], "--rootfs needs a folder"),
])
def test_usage_errors(env, args, msg):
    r = run(env, *args)
    assert r.returncode == 2
    assert r.stderr == f"arm64-check.sh: {msg}; see --help\n"


def refused(env, r) -> str:
    """Exit 3, one line on stderr, nothing on stdout, and nothing changed: no tree, no lock,
    no binfmt_misc folder, and no mount, chroot or debootstrap was run."""
    assert r.returncode == 3, r.stderr
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert not (env[0] / "cache").exists() and not (env[0] / "binfmt").exists()
    assert not [c for c in calls(env) if c.split()[0] in ("mount", "chroot", "debootstrap")]
    return r.stderr.strip()


def test_not_root(env):
    assert refused(env, run(env, STUB_UID="1000")) == (
        "arm64-check.sh: cannot emulate aarch64 here: needs root (it mounts /proc, registers a binfmt_misc "
        "handler and runs chroot); run it with sudo")


def test_already_aarch64(env):
    assert refused(env, run(env, STUB_MACHINE="aarch64")) == (
        "arm64-check.sh: cannot emulate aarch64 here: this machine is aarch64 already: run the test suite "
        "directly (python -m pytest)")


def test_missing_tools(env):
    (env[0] / "stubs" / "debootstrap").unlink()
    msg = refused(env, run(env, PATH=f"{env[0] / 'stubs'}:/bin:/usr/bin/nonexistent"))
    assert msg.startswith("arm64-check.sh: cannot emulate aarch64 here: 'debootstrap' is not installed; "
                          "apt-get install debootstrap qemu-user-static")


def test_missing_qemu(env):
    msg = refused(env, run(env, KGSEARCH_QEMU=str(env[0] / "nowhere" / "qemu-aarch64-static")))
    assert msg == (f"arm64-check.sh: cannot emulate aarch64 here: {env[0]}/nowhere/qemu-aarch64-static is missing; "
                   "apt-get install qemu-user-static")


@pytest.mark.skipif(shutil.which("flock") is None, reason="flock (util-linux) is not installed")
def test_binfmt_misc_cannot_be_mounted(env):
    """As in a container without binfmt_misc: the mount fails, the script says so in one line
    and leaves nothing behind (no half-built tree; the lock file is all that remains)."""
    if not Path("/proc/filesystems").exists() or "binfmt_misc" not in Path("/proc/filesystems").read_text():
        pytest.skip("this kernel has no binfmt_misc, so the script refuses before it tries to mount it")
    tmp, _ = env
    r = run(env)
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip() == (f"arm64-check.sh: cannot emulate aarch64 here: mounting binfmt_misc on {tmp}/binfmt "
                                f"failed (mount: {tmp}/binfmt: permission denied.); a container needs the host to "
                                "provide it")
    assert calls(env)[-1] == f"mount -t binfmt_misc binfmt_misc {tmp}/binfmt"
    assert sorted(p.name for p in (tmp / "cache").iterdir()) == ["arm64-rootfs.lock"]
    assert not [c for c in calls(env) if c.split()[0] in ("chroot", "debootstrap")]


def test_host_python_without_numpy(env, tmp_path):
    nonumpy = tmp_path / "python-without-numpy"
    nonumpy.write_text("#!/bin/sh\nexit 1\n")
    nonumpy.chmod(0o755)
    tmp, e = env
    r = subprocess.run([BASH, str(SCRIPT), "--host-python", str(nonumpy)], env=e, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert r.stderr == (f"arm64-check.sh: the host Python '{nonumpy}' cannot import numpy; give --host-python a "
                        "Python with numpy\n")
    assert not (tmp / "cache").exists()
