#!/usr/bin/env bash
# Install kgsearch in Termux (Android) from this checkout, then prove it works on the demo.
#
#   termux/install.sh            # what you normally run, in Termux
#   termux/install.sh --help
#
# What it does, in order (every step is safe to repeat):
#   1. pkg install -y python python-pip python-numpy
#      numpy always comes prebuilt from pkg: 'pip install numpy' would compile it from source,
#      which needs a compiler toolchain and takes very long on a phone.
#   2. checks that python can import numpy.
#   3. pip install --no-deps --editable <this checkout>
#      kgsearch is pure Python, so nothing is compiled. --no-deps stops pip from looking at
#      numpy at all (it is already there from pkg, in the same site-packages). When setuptools
#      and wheel are already installed, --no-build-isolation is added so nothing is downloaded;
#      otherwise pip fetches those two pure-Python build tools for the build.
#      Editable install: the installed command runs this checkout, so keep the folder
#      (and 'git pull' updates kgsearch). Skipped when already installed from here.
#   4. creates the data dir ${XDG_DATA_HOME:-$HOME/.local/share}/kgsearch
#   5. smoke test: kgsearch demo "<query>" (indexes the built-in demo, answers one query).
#
# Exit codes: 0 done, 1 a step failed (the message says which and what to do), 2 bad usage.
set -euo pipefail

# shellcheck disable=SC2034  # (PROG: read by common.sh)
PROG="install.sh"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python}"
DATA_DIR="${XDG_DATA_HOME:-$HOME/.local/share}/kgsearch"
QUERY="how do I reindex my notes every hour on my phone"

FORCE=0
DRY_RUN=0
DO_PKG=1
DO_SMOKE=1
REINSTALL=0
BREAK_SYSTEM=0

usage() {
    cat <<EOF
Usage: termux/install.sh [options]

Install kgsearch in Termux from this checkout ($REPO) and run a smoke test.
Safe to rerun: finished steps are repeated harmlessly or skipped.

Options:
  --dry-run                  print the commands that change things, run none of them
                             (read-only checks still run; works outside Termux too)
  --force                    run even though this does not look like Termux
  --no-pkg                   skip 'pkg install' (python, pip and numpy are already there)
  --reinstall                run pip even if kgsearch is already installed from here
  --break-system-packages    pass this to pip if your Python is marked externally managed
  --no-smoke                 skip the smoke test
  --query TEXT               smoke-test query (default: "$QUERY")
  -h, --help                 show this help

Environment: PYTHON (default: python), XDG_DATA_HOME.
EOF
}

# say, note, fail, usage_error, run, abspath
# shellcheck source=termux/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

while (( $# )); do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --dry-run) DRY_RUN=1 ;;
        --force) FORCE=1 ;;
        --no-pkg) DO_PKG=0 ;;
        --no-smoke) DO_SMOKE=0 ;;
        --reinstall) REINSTALL=1 ;;
        --break-system-packages) BREAK_SYSTEM=1 ;;
        --query)
            (( $# >= 2 )) || { note "--query needs a value; see --help"; exit 2; }
            QUERY="$2"; shift ;;
        --query=*) QUERY="${1#--query=}" ;;
        *) note "unknown option '$1'; see --help"; exit 2 ;;
    esac
    shift
done

is_termux() {
    [[ -n "${TERMUX_VERSION:-}" || "${PREFIX:-}" == */com.termux/* ]]
}

if ! is_termux && (( ! FORCE && ! DRY_RUN )); then
    fail "this does not look like Termux (no \$TERMUX_VERSION, \$PREFIX is not under com.termux); on a laptop use 'pip install -e .', or pass --force (or --dry-run) to run this script anyway"
fi
[[ -f "$REPO/setup.cfg" && -f "$REPO/kgsearch/__init__.py" ]] \
    || fail "$REPO is not a kgsearch checkout (no setup.cfg or kgsearch/); run the install.sh inside the cloned repository"
(( DRY_RUN )) && say "dry run: commands are printed, not run"

# 1. system packages -------------------------------------------------------------------------
if (( DO_PKG )); then
    say "installing python, pip and numpy with pkg"
    command -v pkg >/dev/null 2>&1 || (( DRY_RUN )) \
        || fail "pkg not found: this is not Termux; install python3 and numpy with your system's package manager and rerun with --no-pkg"
    rc=0
    run pkg install -y python python-pip python-numpy || rc=$?
    (( rc == 0 )) || fail "'pkg install -y python python-pip python-numpy' failed (exit $rc); check the network or pick another mirror with 'termux-change-repo', then rerun"
else
    say "skipping pkg install (--no-pkg)"
fi

# 2. numpy from pkg, importable ----------------------------------------------------------------
if (( ! DRY_RUN )); then
    command -v "$PY" >/dev/null 2>&1 \
        || fail "'$PY' not found; run 'pkg install python' (or set PYTHON=/path/to/python3)"
    "$PY" -c 'import numpy' >/dev/null 2>&1 \
        || fail "python cannot import numpy; run 'pkg install python-numpy' (never 'pip install numpy': it would compile numpy from source)"
fi

# 3. kgsearch itself -------------------------------------------------------------------------
installed_here() {
    # kgsearch importable from this checkout, and its command on PATH
    command -v "$PY" >/dev/null 2>&1 || return 1
    "$PY" -c 'import os, sys, kgsearch
sys.exit(os.path.realpath(os.path.dirname(kgsearch.__file__)) != os.path.realpath(sys.argv[1]))' \
        "$REPO/kgsearch" >/dev/null 2>&1 || return 1
    command -v kgsearch >/dev/null 2>&1
}

if (( ! REINSTALL )) && installed_here; then
    say "kgsearch is already installed from $REPO (use --reinstall to run pip again)"
else
    say "installing kgsearch from $REPO (pure Python: nothing is compiled)"
    pip_args=(install --no-deps)
    if command -v "$PY" >/dev/null 2>&1 && "$PY" -c 'import sys, setuptools, wheel
sys.exit(int(setuptools.__version__.split(".")[0]) < 64)' >/dev/null 2>&1; then
        pip_args+=(--no-build-isolation)
    fi
    (( BREAK_SYSTEM )) && pip_args+=(--break-system-packages)
    pip_args+=(--editable "$REPO")
    pip_log="$(mktemp "${TMPDIR:-/tmp}/kgsearch-pip.XXXXXX")"
    trap 'rm -f "$pip_log"' EXIT
    rc=0
    run "$PY" -m pip "${pip_args[@]}" 2>&1 | tee "$pip_log" || rc=$?
    if (( rc != 0 )); then
        if grep -q 'externally-managed-environment' "$pip_log"; then
            fail "pip refused: this Python is marked externally managed; rerun with --break-system-packages (kgsearch is pure Python and installs no dependencies)"
        fi
        fail "'$PY -m pip ${pip_args[*]}' failed (exit $rc); see pip's message above ('pkg install python-pip' if pip is missing), then rerun"
    fi
    if (( ! DRY_RUN )) && ! command -v kgsearch >/dev/null 2>&1; then
        fail "pip installed kgsearch but the 'kgsearch' command is not on PATH; add pip's script folder to PATH (python -m site --user-base)/bin, or run 'python -m kgsearch'"
    fi
fi

# 4. data dir --------------------------------------------------------------------------------
if [[ -d "$DATA_DIR" ]]; then
    say "data dir $DATA_DIR exists"
else
    say "creating data dir $DATA_DIR"
    run mkdir -p "$DATA_DIR" || fail "cannot create $DATA_DIR; check that \$HOME ($HOME) is writable"
fi

# 5. smoke test ------------------------------------------------------------------------------
if (( DO_SMOKE )); then
    say "smoke test: index the built-in demo and ask it one question"
    rc=0
    run kgsearch demo "$QUERY" || rc=$?
    (( rc == 0 )) || fail "smoke test failed: 'kgsearch demo' exited $rc; rerun it by hand to see the error, or report it with that output"
fi

(( DRY_RUN )) && { say "dry run finished; nothing was changed"; exit 0; }
say "kgsearch is installed (it runs from $REPO; keep that folder)"
cat <<EOF
Next:
  termux-setup-storage                         # once, to reach ~/storage/shared
  kgsearch index ~/storage/shared/YourVault    # index your notes
  kgsearch search "what you are looking for"
  termux/schedule.sh install --every 60        # reindex every hour (see termux/README.md)
EOF
