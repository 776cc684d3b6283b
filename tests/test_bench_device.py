"""kgsearch bench's device facts: the device name (Android's getprop first) and the emulation
check, with fake getprop answers, /proc/cpuinfo texts, environments and binfmt_misc folders
(no phone or emulator needed)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from kgsearch import bench
from kgsearch.bench import detect_emulation, device_name

X86_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model name\t: AMD EPYC
flags\t\t: fpu vme de pse tsc msr pae sse sse2 ssse3 avx2
"""
# a phone's (Snapdragon, arm64 kernel): no model name, ARM fields only
PHONE_CPUINFO = """processor\t: 0
BogoMIPS\t: 38.40
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm
CPU implementer\t: 0x51
CPU architecture: 8
CPU variant\t: 0xd
CPU part\t: 0x805
CPU revision\t: 14
"""
PI_CPUINFO = PHONE_CPUINFO + "\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n"
QEMU_BINFMT = """enabled
interpreter /usr/bin/qemu-aarch64-static
flags: F
offset 0
magic 7f454c460201010000000000000000000200b700
mask ffffffffffffff00fffffffffffffffffeffffff
"""


def props(**kv):
    return lambda name: kv.get(name.replace("ro.product.", ""), "")


def files(**kv):
    table = {"/proc/device-tree/model": kv.get("dt", ""), "/sys/class/dmi/id/product_name": kv.get("dmi", "")}
    return lambda path: table.get(path, "")


# ---------------------------------------------------------------------------- device name
@pytest.mark.parametrize("maker,model,want", [
    ("Google", "Pixel 7a", "Google Pixel 7a"),
    ("samsung", "SM-A546B", "samsung SM-A546B"),
    ("OnePlus", "OnePlus 9", "OnePlus 9"),              # model already names the maker: not twice
    ("", "Pixel 7a", "Pixel 7a"),
])
def test_android_name_comes_from_getprop(maker, model, want):
    got = device_name(prop=props(manufacturer=maker, model=model), read=files(dmi="KVM"), cpuinfo=PHONE_CPUINFO)
    assert got == want


def test_off_android_device_tree_then_dmi_then_cpu():
    assert device_name(prop=props(), read=files(dt="Raspberry Pi 4 Model B Rev 1.4\x00", dmi="x"),
                       cpuinfo=PI_CPUINFO) == "Raspberry Pi 4 Model B Rev 1.4"
    assert device_name(prop=props(), read=files(dmi="ThinkPad X1 Carbon\n"), cpuinfo=X86_CPUINFO) == "ThinkPad X1 Carbon"
    assert device_name(prop=props(), read=files(dmi="To be filled by O.E.M."), cpuinfo=X86_CPUINFO) == "AMD EPYC"
    assert device_name(prop=props(), read=files(), cpuinfo=PI_CPUINFO) == "BCM2835"


def test_getprop_is_run_when_on_path(tmp_path, monkeypatch):
    fake = tmp_path / "getprop"
    fake.write_text('#!/bin/sh\ncase "$1" in ro.product.model) echo "Pixel 7a" ;; '
                    'ro.product.manufacturer) echo Google ;; esac\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert bench.getprop("ro.product.model") == "Pixel 7a"
    assert device_name(read=files(dmi="KVM")) == "Google Pixel 7a"
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert bench.getprop("ro.product.model") == ""


def test_getprop_that_hangs_or_fails_gives_nothing(monkeypatch):
    def hang(*a, **kw):
        raise subprocess.TimeoutExpired(a[0], 5)
    monkeypatch.setattr(bench.shutil, "which", lambda name: "/system/bin/getprop")
    monkeypatch.setattr(bench.subprocess, "run", hang)
    assert bench.getprop("ro.product.model") == ""


# ---------------------------------------------------------------------------- emulation
def test_aarch64_seeing_an_x86_cpu_is_emulated():
    why = detect_emulation("aarch64", X86_CPUINFO, environ={}, binfmt_dir="/nonexistent")
    assert why == "aarch64 code on an x86 CPU (AMD EPYC): /proc/cpuinfo shows the host's CPU, as under qemu-user"


def test_real_arm_cpus_are_not_emulated():
    for info in (PHONE_CPUINFO, PI_CPUINFO):
        assert detect_emulation("aarch64", info, environ={}, binfmt_dir="/nonexistent") is None
    assert detect_emulation("armv7l", PI_CPUINFO, environ={}, binfmt_dir="/nonexistent") is None


def test_x86_hosts_are_never_called_emulated(tmp_path):
    (tmp_path / "qemu-aarch64").write_text(QEMU_BINFMT)
    assert detect_emulation("x86_64", X86_CPUINFO, environ={"QEMU_CPU": "max"}, binfmt_dir=str(tmp_path)) is None


def test_no_arm_fields_in_cpuinfo_is_emulated():
    assert detect_emulation("aarch64", "processor\t: 0\nmodel name\t: some CPU\n", environ={},
                            binfmt_dir="/nonexistent") == "aarch64 process but /proc/cpuinfo shows no ARM CPU"


def test_qemu_environment_and_binfmt_handler(tmp_path):
    # an emulator that fakes an ARM /proc/cpuinfo: the other two signs still tell
    assert detect_emulation("aarch64", PHONE_CPUINFO, environ={"QEMU_LD_PREFIX": "/x", "QEMU_CPU": "max"},
                            binfmt_dir="/nonexistent") == "qemu-user: QEMU_CPU, QEMU_LD_PREFIX set"
    for name in ("register", "status"):
        (tmp_path / name).write_text("enabled\n")
    (tmp_path / "python3.11").write_text("enabled\ninterpreter /usr/bin/python3\nmagic a70d0d0a\n")
    assert detect_emulation("aarch64", PHONE_CPUINFO, environ={}, binfmt_dir=str(tmp_path)) is None
    (tmp_path / "qemu-aarch64").write_text(QEMU_BINFMT.replace("enabled", "disabled"))
    assert detect_emulation("aarch64", PHONE_CPUINFO, environ={}, binfmt_dir=str(tmp_path)) is None
    (tmp_path / "qemu-aarch64").write_text(QEMU_BINFMT)
    assert detect_emulation("aarch64", PHONE_CPUINFO, environ={}, binfmt_dir=str(tmp_path)) == (
        "binfmt_misc handler 'qemu-aarch64' runs aarch64 programs through /usr/bin/qemu-aarch64-static")


def test_unreadable_cpuinfo_cannot_tell():
    assert detect_emulation("aarch64", "", environ={}, binfmt_dir="/nonexistent") is None


def test_device_facts_and_report_name_the_device_and_the_emulation(monkeypatch):
    monkeypatch.setattr(bench, "device_name", lambda **kw: "Google Pixel 7a")
    monkeypatch.setattr(bench, "detect_emulation", lambda **kw: "aarch64 code on an x86 CPU (AMD EPYC): x")
    d = bench.device_facts()
    assert d["device"] == "Google Pixel 7a" and d["emulated"].startswith("aarch64 code on an x86 CPU")
    r = {"device": {**d, "cpu": "Qualcomm", "machine": "aarch64", "cores": 8, "ram_gb": 7.5},
         "corpus": "demo", "nodes": 1, "edges": 0, "index_seconds": 1.0, "reindex_nochange_seconds": 0.1,
         "db_mb": 0.5, "query_ms": {"p50": 1, "p95": 2, "p99": 3}, "qps": 10, "first_query_ms": 5,
         "peak_rss_mb": 40, "cold_start_ms": 200, "cold_runs": 5, "help_start_ms": 90, "stages_ms": {}}
    lines = bench.format_bench(r).splitlines()
    assert lines[1].startswith("device: Google Pixel 7a (Qualcomm, aarch64, 8 cores, 7.5 GB), Python ")
    assert lines[2] == ("EMULATED (aarch64 code on an x86 CPU (AMD EPYC): x): times measure the emulator, "
                        "not the device")


def test_this_machine(monkeypatch):
    """On the machine running the tests: a non-empty name; an x86 host is never 'emulated'."""
    d = bench.device_facts()
    assert d["device"]
    if d["machine"] == "x86_64":
        assert d["emulated"] is None
    assert sys.platform != "linux" or d["cpu"]
