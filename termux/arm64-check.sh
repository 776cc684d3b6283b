#!/usr/bin/env bash
# A phone stand-in anyone can run: kgsearch on aarch64 under emulation, with the numpy a phone's
# package manager gives, compared with this (x86_64) machine.
#
#   sudo termux/arm64-check.sh              # build (first run, ~10 min) or reuse the arm64 tree, check, record
#   sudo termux/arm64-check.sh --no-tests   # skip the test suite (the slow part under emulation)
#
# What it does:
#   1. Builds a Debian 12 (bookworm) arm64 root file system with debootstrap --foreign and
#      qemu-user-static (binfmt_misc), with python3, python3-venv, python3-numpy (1.24.x: a
#      distribution's numpy, not a wheel), python3-pytest and nothing else; cached in
#      ${XDG_CACHE_HOME:-~/.cache}/kgsearch/arm64-rootfs (--rootfs or KGSEARCH_ARM64_ROOTFS to
#      move it). It is built in a temporary folder beside it and renamed when complete, so a
#      cache is either whole or absent.
#   2. Copies this checkout into it and installs it into a venv that uses Debian's numpy
#      (--system-site-packages; pip --no-deps --no-index: nothing is downloaded).
#   3. On both machines: the README demo, a fresh index of the demo corpus, a fixed query set
#      (bench/arm64_check.py probe); then each machine searches the index the other built.
#   4. On arm64: the test suite without optional test oracles (they skip there).
#   5. Compares (identical keys and order; scores within 1e-6) and writes
#      bench/results/arm64.json and arm64.md (--out-dir to put them elsewhere).
# It mounts /proc in the tree, and mounts binfmt_misc and registers an aarch64 handler only when
# they are not already there; all of that is undone on exit, also on failure or Ctrl-C.
#
# Exit codes: 0 identical and tests passed, 1 a step failed or the results differ,
# 2 bad usage, 3 this machine cannot emulate aarch64 (not root, no binfmt_misc, no qemu).
set -euo pipefail

PROG="arm64-check.sh"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOTFS="${KGSEARCH_ARM64_ROOTFS:-${XDG_CACHE_HOME:-$HOME/.cache}/kgsearch/arm64-rootfs}"
MIRROR="${KGSEARCH_ARM64_MIRROR:-http://deb.debian.org/debian}"
SUITE="bookworm"
PACKAGES="python3,python3-venv,python3-numpy,python3-pytest,python3-setuptools,python3-wheel"
BINFMT="${KGSEARCH_BINFMT_DIR:-/proc/sys/fs/binfmt_misc}"
QEMU="${KGSEARCH_QEMU:-/usr/bin/qemu-aarch64-static}"
HANDLER="kgsearch-aarch64"
# the first 20 bytes of an aarch64 ELF executable and the mask binfmt_misc applies (as Debian's
# qemu-user-static registers them)
MAGIC='\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
MASK='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
MAGIC_HEX="7f454c460201010000000000000000000200b700"
OUT_DIR="$REPO/bench/results"
HOST_PYS=()
RUNS=3
TESTS=1
REBUILD=0

usage() {
    cat <<EOF
Usage: sudo termux/arm64-check.sh [--rootfs DIR] [--rebuild] [--runs N] [--no-tests]
                                  [--out-dir DIR] [--host-python PY] [--mirror URL]

Runs kgsearch on aarch64 under qemu-user emulation (a Debian 12 arm64 tree with Debian's numpy)
and compares it with this machine. Needs root, Linux with binfmt_misc, and the Debian packages
debootstrap and qemu-user-static (apt-get install debootstrap qemu-user-static).

Options:
  --rootfs DIR       the cached arm64 tree (default: \$KGSEARCH_ARM64_ROOTFS, else
                     \${XDG_CACHE_HOME:-~/.cache}/kgsearch/arm64-rootfs; now $ROOTFS)
  --rebuild          build the tree anew even if a complete one is cached
  --runs N           timed runs of each measurement (default 3)
  --no-tests         do not run the test suite on arm64
  --out-dir DIR      where arm64.json and arm64.md go (default: bench/results of this checkout)
  --host-python PY   an x86_64 Python with numpy to compare with (repeatable; default: both
                     /usr/bin/python3 with Debian's python3-numpy, the same numpy version as
                     the arm64 tree, so only the CPU differs, and this checkout's .venv/bin/python,
                     the numpy a laptop has; each one that can import numpy)
  --mirror URL       Debian mirror for debootstrap (default: \$KGSEARCH_ARM64_MIRROR, else
                     $MIRROR)
  -h, --help         show this help

Exit codes: 0 identical and tests passed, 1 a step failed or results differ, 2 bad usage,
3 this machine cannot emulate aarch64.
EOF
}

note() { printf '%s: %s\n' "$PROG" "$*" >&2; }
fail() { note "$*"; exit 1; }
usage_error() { note "$*; see --help"; exit 2; }
cannot() { note "cannot emulate aarch64 here: $*"; exit 3; }
step() { printf '==> %s\n' "$*"; }

while (( $# )); do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --rootfs) (( $# >= 2 )) || usage_error "--rootfs needs a folder"; ROOTFS="$2"; shift ;;
        --rootfs=*) ROOTFS="${1#--rootfs=}" ;;
        --rebuild) REBUILD=1 ;;
        --runs) (( $# >= 2 )) || usage_error "--runs needs a number"; RUNS="$2"; shift ;;
        --runs=*) RUNS="${1#--runs=}" ;;
        --no-tests) TESTS=0 ;;
        --out-dir) (( $# >= 2 )) || usage_error "--out-dir needs a folder"; OUT_DIR="$2"; shift ;;
        --out-dir=*) OUT_DIR="${1#--out-dir=}" ;;
        --host-python) (( $# >= 2 )) || usage_error "--host-python needs a path"; HOST_PYS+=("$2"); shift ;;
        --host-python=*) HOST_PYS+=("${1#--host-python=}") ;;
        --mirror) (( $# >= 2 )) || usage_error "--mirror needs a URL"; MIRROR="$2"; shift ;;
        --mirror=*) MIRROR="${1#--mirror=}" ;;
        *) usage_error "unknown option '$1'" ;;
    esac
    shift
done
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || usage_error "--runs must be a whole number of at least 1, not '$RUNS'"
[[ -n "$ROOTFS" && "$ROOTFS" != "/" ]] || usage_error "--rootfs must be a folder other than /"
ROOTFS="${ROOTFS%/}"
[[ "$ROOTFS" == /* ]] || ROOTFS="$PWD/$ROOTFS"

# --- can this machine emulate? (checked before anything is changed) ----------------------------
[[ "$(uname -s)" == Linux ]] || cannot "needs Linux (binfmt_misc, chroot); this is $(uname -s)"
case "$(uname -m)" in
    aarch64|arm64) cannot "this machine is aarch64 already: run the test suite directly (python -m pytest)" ;;
esac
[[ "$(id -u)" == 0 ]] || cannot "needs root (it mounts /proc, registers a binfmt_misc handler and runs chroot); run it with sudo"
for cmd in debootstrap chroot mount umount flock; do
    command -v "$cmd" >/dev/null 2>&1 \
        || cannot "'$cmd' is not installed; apt-get install debootstrap qemu-user-static (util-linux for mount, flock)"
done
[[ -x "$QEMU" ]] || cannot "$QEMU is missing; apt-get install qemu-user-static"
if [[ ! -e "$BINFMT/register" ]] && ! grep -qw binfmt_misc /proc/filesystems 2>/dev/null; then
    cannot "this kernel has no binfmt_misc (not in /proc/filesystems), so it cannot run aarch64 programs through qemu"
fi
if (( ${#HOST_PYS[@]} )); then
    for py in "${HOST_PYS[@]}"; do
        "$py" -c 'import numpy' >/dev/null 2>&1 || fail "the host Python '$py' cannot import numpy; give --host-python a Python with numpy"
    done
else
    for py in /usr/bin/python3 "$REPO/.venv/bin/python"; do
        [[ -x "$py" ]] && "$py" -c 'import numpy' >/dev/null 2>&1 && HOST_PYS+=("$py")
    done
    (( ${#HOST_PYS[@]} )) || fail "no host Python with numpy to compare with; apt-get install python3-numpy (the same numpy as the arm64 tree) or pass --host-python"
fi

# --- everything below is undone on exit -----------------------------------------------------------
MOUNTS=()             # mount points we mounted, in order
MOUNTED_BINFMT=0
REGISTERED=0
PARTIAL=""            # a tree being built: removed unless it was completed and renamed
WORK=""

unmount_under() {     # unmount everything mounted at or below $1 (deepest first): leftovers of a killed run
    local dir="$1" m
    [[ -r /proc/self/mounts ]] || return 0
    while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done < <(awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r)
}

cleanup() {
    local rc=$? i
    set +e
    for (( i=${#MOUNTS[@]}-1; i>=0; i-- )); do
        umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null \
            || note "could not unmount ${MOUNTS[i]}; run: umount -l ${MOUNTS[i]}"
    done
    if [[ -n "$PARTIAL" && -d "$PARTIAL" ]]; then
        unmount_under "$PARTIAL"
        rm -rf --one-file-system "$PARTIAL"
    fi
    if (( REGISTERED )); then
        echo -1 > "$BINFMT/$HANDLER" 2>/dev/null || note "could not remove the binfmt_misc handler; run: echo -1 > $BINFMT/$HANDLER"
    fi
    if (( MOUNTED_BINFMT )); then
        umount "$BINFMT" 2>/dev/null || note "could not unmount $BINFMT; run: umount $BINFMT"
    fi
    [[ -n "$WORK" ]] && rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$(dirname "$ROOTFS")"
exec 9>"$ROOTFS.lock"
flock -n 9 || fail "another arm64-check.sh is using $ROOTFS (lock $ROOTFS.lock); wait for it to finish"
# leftovers of a run that was killed: mounts in the cached tree, half-built trees beside it
unmount_under "$ROOTFS"
for old in "$ROOTFS".partial.* "$ROOTFS".old.*; do
    [[ -d "$old" ]] || continue
    unmount_under "$old"
    rm -rf --one-file-system "$old"
done

# binfmt_misc: mount it if needed, then use an enabled aarch64 handler with the F flag (the
# interpreter is opened when registered, so it works inside the chroot), or register ours.
if [[ ! -e "$BINFMT/register" ]]; then
    mkdir -p "$BINFMT" 2>/dev/null || true
    if ! err="$(mount -t binfmt_misc binfmt_misc "$BINFMT" 2>&1)"; then
        cannot "mounting binfmt_misc on $BINFMT failed (${err//$'\n'/ }); a container needs the host to provide it"
    fi
    MOUNTED_BINFMT=1
fi
[[ "$(cat "$BINFMT/status" 2>/dev/null)" == enabled ]] || cannot "binfmt_misc is disabled; enable it: echo 1 > $BINFMT/status"
handler=""
for f in "$BINFMT"/*; do
    case "${f##*/}" in register|status) continue ;; esac
    [[ -r "$f" ]] || continue
    if [[ "$(head -n 1 "$f")" == enabled ]] && grep -q "^magic $MAGIC_HEX" "$f" && grep -q '^flags:.*F' "$f"; then
        handler="${f##*/}"
        break
    fi
done
if [[ -z "$handler" ]]; then
    if ! printf '%s' ":$HANDLER:M::$MAGIC:$MASK:$QEMU:F" > "$BINFMT/register" 2>/dev/null; then
        cannot "registering an aarch64 handler in $BINFMT/register failed"
    fi
    REGISTERED=1
    handler="$HANDLER"
fi
step "aarch64 programs run through binfmt_misc handler '$handler' ($("$QEMU" --version | head -n 1))"

# --- the arm64 tree ------------------------------------------------------------------------------
MARKER="$ROOTFS/.kgsearch-arm64-rootfs"
if (( REBUILD )) || [[ ! -f "$MARKER" ]]; then
    PARTIAL="$ROOTFS.partial.$$"
    log="$ROOTFS.build.log"
    step "building a Debian $SUITE arm64 tree in $PARTIAL (about 10 minutes; log: $log)"
    : > "$log"
    debootstrap --arch=arm64 --foreign --variant=minbase --include="$PACKAGES" "$SUITE" "$PARTIAL" "$MIRROR" >>"$log" 2>&1 \
        || fail "debootstrap (first stage) failed; the last lines of $log say why: $(tail -n 1 "$log")"
    chroot "$PARTIAL" /bin/true 2>>"$log" \
        || cannot "aarch64 programs do not start even with binfmt_misc handler '$handler' (see $log)"
    chroot "$PARTIAL" /debootstrap/debootstrap --second-stage >>"$log" 2>&1 \
        || fail "debootstrap (second stage, emulated) failed; see $log: $(tail -n 1 "$log")"
    chroot "$PARTIAL" apt-get clean >>"$log" 2>&1 || true
    unmount_under "$PARTIAL"
    printf 'suite=%s\npackages=%s\nmirror=%s\nbuilt=%s\n' "$SUITE" "$PACKAGES" "$MIRROR" "$(date '+%Y-%m-%d %H:%M:%S')" \
        > "$PARTIAL/.kgsearch-arm64-rootfs"
    if [[ -d "$ROOTFS" ]]; then
        mv "$ROOTFS" "$ROOTFS.old.$$"
        rm -rf --one-file-system "$ROOTFS.old.$$"
    fi
    mv "$PARTIAL" "$ROOTFS"
    PARTIAL=""
else
    step "reusing the arm64 tree $ROOTFS ($(grep '^built=' "$MARKER" | cut -d= -f2-))"
fi
# shellcheck disable=SC2016  # ${Version} is dpkg-query's format, not a shell expansion
numpy_deb="$(chroot "$ROOTFS" dpkg-query -W -f '${Version}' python3-numpy 2>/dev/null)" \
    || fail "$ROOTFS has no python3-numpy; rebuild it with --rebuild"
rootfs_info="Debian $(cat "$ROOTFS/etc/debian_version") arm64 (debootstrap $SUITE, python3-numpy $numpy_deb)"

# --- run ------------------------------------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kgsearch-arm64.XXXXXX")"
IN="$ROOTFS/tmp/kgsearch-check"          # the same folder, seen from inside as /tmp/kgsearch-check
rm -rf "$IN" "$ROOTFS/opt/kgsearch"
mkdir -p "$IN" "$ROOTFS/opt/kgsearch"
# the checkout as it is now (committed or not), without its virtualenvs and indexes
if git -C "$REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$REPO" ls-files -z --cached --others --exclude-standard \
        | (cd "$REPO" && while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done) \
        | tar -C "$REPO" --null -T - -cf - | tar -C "$ROOTFS/opt/kgsearch" -xf -
else
    tar -C "$REPO" --exclude='./.venv*' --exclude=./.git --exclude='*.db' -cf - . | tar -C "$ROOTFS/opt/kgsearch" -xf -
fi

i=0
for py in "${HOST_PYS[@]}"; do
    i=$(( i + 1 ))
    step "x86_64 #$i ($py, numpy $("$py" -c 'import numpy; print(numpy.__version__)')): README demo, demo index, fixed query set, $RUNS timed runs"
    mkdir -p "$WORK/host$i"
    "$py" "$REPO/bench/arm64_check.py" probe --out "$WORK/host$i/probe.json" --runs "$RUNS" --work "$WORK/host$i/work" \
        || fail "the x86_64 probe with $py failed (its message is above)"
    cp "$WORK/host$i/work/index.db" "$IN/host$i-index.db"
done

mount -t proc proc "$ROOTFS/proc"
MOUNTS+=("$ROOTFS/proc")
cat > "$IN/inner.sh" <<'EOF'
#!/bin/bash
# runs inside the arm64 tree: 'probe RUNS' or 'tests'
set -euo pipefail
cd /tmp/kgsearch-check
if [[ "$1" == probe ]]; then
    rm -rf /opt/venv
    python3 -m venv --system-site-packages /opt/venv
    /opt/venv/bin/python -m pip install --quiet --no-deps --no-index --no-build-isolation -e /opt/kgsearch \
        >pip.log 2>&1 || { cat pip.log >&2; exit 1; }
    /opt/venv/bin/python -c 'import numpy; print("arm64: numpy", numpy.__version__, "from", numpy.__file__)'
    /opt/venv/bin/python /opt/kgsearch/bench/arm64_check.py probe --out arm64.json --runs "$2" --work arm
    for db in host*-index.db; do
        /opt/venv/bin/python /opt/kgsearch/bench/arm64_check.py search --db "$db" --out "${db%-index.db}-index-on-arm64.json"
    done
else
    cd /opt/kgsearch
    rc=0
    /opt/venv/bin/python -m pytest -p no:cacheprovider -o addopts= -q -rs > /tmp/kgsearch-check/tests.log 2>&1 || rc=$?
    echo "pytest exit $rc" >> /tmp/kgsearch-check/tests.log
fi
EOF
in_arm64() {
    chroot "$ROOTFS" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TMPDIR=/tmp \
        /bin/bash /tmp/kgsearch-check/inner.sh "$@"
}
step "arm64 (emulated): install into a venv on Debian's numpy, README demo, demo index, query set, the x86_64 indexes"
in_arm64 probe "$RUNS" || fail "the arm64 run failed (its message is above)"
if (( TESTS )); then
    step "arm64 (emulated): the test suite without optional test oracles (slow: tens of minutes)"
    in_arm64 tests || fail "the arm64 test run could not start; see $IN/tests.log"
    grep -E '^(=+ )?[0-9]+ (passed|failed)' "$IN/tests.log" | tail -n 1 > "$WORK/tests-summary.txt" || true
    [[ -s "$WORK/tests-summary.txt" ]] || fail "the arm64 test run printed no summary; see $IN/tests.log"
    printf 'arm64 tests: %s\n' "$(cat "$WORK/tests-summary.txt")"
    cp "$IN/tests.log" "$WORK/tests.log"
fi

step "x86_64: search the index built on arm64"
cp "$IN/arm64.json" "$WORK/"
cp "$IN/arm/index.db" "$WORK/arm64-index.db"
compare_args=()
i=0
for py in "${HOST_PYS[@]}"; do
    i=$(( i + 1 ))
    cp "$IN/host$i-index-on-arm64.json" "$WORK/host$i/host-index-on-arm64.json"
    "$py" "$REPO/bench/arm64_check.py" search --db "$WORK/arm64-index.db" --out "$WORK/host$i/arm64-index-on-host.json" \
        || fail "searching the arm64-built index with $py failed (its message is above)"
    compare_args+=(--host-dir "$WORK/host$i")
done

step "compare"
(( TESTS )) && compare_args+=(--tests "$WORK/tests.log")
set +e
"${HOST_PYS[0]}" "$REPO/bench/arm64_check.py" compare --arm "$WORK/arm64.json" "${compare_args[@]}" \
    --out-dir "$OUT_DIR" --rootfs-info "$rootfs_info" --emulator "$("$QEMU" --version | head -n 1)"
rc=$?
set -e
rm -rf "$IN" "$ROOTFS/opt/kgsearch" "$ROOTFS/opt/venv"
(( rc == 0 )) || fail "arm64 and x86_64 differ (see $OUT_DIR/arm64.md)"
step "identical on arm64 and x86_64; saved $OUT_DIR/arm64.json and $OUT_DIR/arm64.md"
