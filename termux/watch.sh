#!/usr/bin/env bash
# Keep kgsearch's index current while you write: run 'kgsearch watch' in the background, in Termux
# (or on any Linux box), and optionally start it when the phone boots (Termux:Boot).
#
#   termux/watch.sh start [--db PATH] [--backend auto|inotify|poll] [--interval S] [--wake-lock] [PATH...]
#   termux/watch.sh stop
#   termux/watch.sh status
#   termux/watch.sh boot [same options as start]   # start it at every boot (Termux:Boot app)
#   termux/watch.sh unboot
#
# start runs 'kgsearch watch' with nohup, logging to <data dir>/watch.log (rotated to watch.log.1
# past 256 KB at each start) and its pid in <data dir>/watch.pid. Without PATH it watches the roots
# already in the index. Only one watcher runs per data dir: start says so when one is running.
#
# Wake lock: the watcher needs none to be correct. Changes made while the phone is awake (you
# editing a note) are indexed within a second or two; anything written while the CPU slept is seen
# when it wakes, and every run compares all files, so nothing is lost. --wake-lock holds
# 'termux-wake-lock' while the watcher runs (released by 'stop'): changes a sync app writes with the
# screen off are then indexed at once, but the CPU never sleeps, which costs battery.
#
# Notes in shared storage (~/storage/shared, a FUSE file system): inotify misses what other apps
# write there, so the watcher polls those folders (a look every --interval seconds, 1 by default;
# 5 halves the cost on a big vault). A scheduled reindex (termux/schedule.sh) can run beside the
# watcher: they share the index lock and never index at once.
set -euo pipefail

# shellcheck disable=SC2034  # (PROG: read by common.sh)
PROG="watch.sh"
DATA_DIR="${XDG_DATA_HOME:-$HOME/.local/share}/kgsearch"
PIDFILE="$DATA_DIR/watch.pid"
LOG="$DATA_DIR/watch.log"
WAKEFILE="$DATA_DIR/watch.wakelock"
BOOT_DIR="${TERMUX_BOOT_DIR:-$HOME/.termux/boot}"
BOOT_SCRIPT="$BOOT_DIR/kgsearch-watch"
SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
MAX_LOG_BYTES=262144
STOP_WAIT=30     # seconds to wait for the watcher to stop (a run in progress is rolled back)
SETTLE="${KGSEARCH_WATCH_SETTLE:-1}"   # seconds after start to check it did not stop at once

usage() {
    cat <<EOF
Usage: termux/watch.sh COMMAND [options] [PATH...]

Commands:
  start [PATH...]   run 'kgsearch watch' in the background (no PATH: the roots already indexed)
  stop              stop it (SIGTERM; a reindex in progress is rolled back, the next start catches up)
  status            is it running, and its last log lines (exit 1 when it is not running)
  boot [PATH...]    also start it at every boot: writes $BOOT_SCRIPT (needs the Termux:Boot app)
  unboot            remove that boot script

Options for start and boot:
  --db PATH         index to keep current (default: \$KGSEARCH_DB or the data dir's index.db)
  --backend B       auto (default), inotify or poll: how changes are noticed
  --interval S      polling: seconds between looks (default 1)
  --wake-lock       hold termux-wake-lock while the watcher runs (indexes changes synced with the
                    screen off at once; the CPU then never sleeps)
Options for all commands:
  --dry-run         print the commands that change things, run none of them
  -h, --help        show this help

Files: $LOG (rotated at 256 KB), $PIDFILE
Exit codes: 0 ok, 1 failed (message says why), 2 bad usage.
EOF
}

# say, note, fail, usage_error, run, abspath
# shellcheck source=termux/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# --- arguments --------------------------------------------------------------------------------
CMD="${1:-}"
case "$CMD" in
    -h|--help|help) usage; exit 0 ;;
    start|stop|status|boot|unboot) shift ;;
    "") usage >&2; exit 2 ;;
    *) usage_error "unknown command '$CMD'" ;;
esac

DB=""
BACKEND=""
INTERVAL=""
WAKE=0
DRY_RUN=0
PATHS=()
while (( $# )); do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --db) (( $# >= 2 )) || usage_error "--db needs a path"; DB="$2"; shift ;;
        --db=*) DB="${1#--db=}" ;;
        --backend) (( $# >= 2 )) || usage_error "--backend needs auto, inotify or poll"; BACKEND="$2"; shift ;;
        --backend=*) BACKEND="${1#--backend=}" ;;
        --interval) (( $# >= 2 )) || usage_error "--interval needs a number of seconds"; INTERVAL="$2"; shift ;;
        --interval=*) INTERVAL="${1#--interval=}" ;;
        --wake-lock) WAKE=1 ;;
        --dry-run) DRY_RUN=1 ;;
        --) shift; PATHS+=("$@"); break ;;
        -*) usage_error "unknown option '$1'" ;;
        *) PATHS+=("$1") ;;
    esac
    shift
done
if [[ "$CMD" != start && "$CMD" != boot ]] \
        && { (( ${#PATHS[@]} )) || [[ -n "$DB$BACKEND$INTERVAL" ]] || (( WAKE )); }; then
    usage_error "paths and options other than --dry-run belong to 'start' and 'boot'"
fi
case "$BACKEND" in
    ""|auto|inotify|poll) ;;
    *) usage_error "--backend must be auto, inotify or poll, not '$BACKEND'" ;;
esac
if [[ -n "$INTERVAL" ]] && ! [[ "$INTERVAL" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
    usage_error "--interval must be a number of seconds, not '$INTERVAL'"
fi

# --- helpers ----------------------------------------------------------------------------------
running_pid() {  # the watcher's pid when it is running (the pid file names a live kgsearch watch)
    [[ -f "$PIDFILE" ]] || return 1
    local pid
    pid="$(head -n 1 "$PIDFILE" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    if [[ -r "/proc/$pid/cmdline" ]]; then
        tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q 'watch' || return 1
    fi
    printf '%s\n' "$pid"
}

watch_cmd() {  # the kgsearch command line, one word per line in WCMD
    WCMD=(kgsearch)
    [[ -n "$DB" ]] && WCMD+=(--db "$(abspath "$DB")")
    WCMD+=(watch)
    [[ -n "$BACKEND" ]] && WCMD+=(--backend "$BACKEND")
    [[ -n "$INTERVAL" ]] && WCMD+=(--interval "$INTERVAL")
    local p
    for p in "${PATHS[@]}"; do
        p="$(abspath "$p")"
        [[ -e "$p" ]] || fail "no such file or folder: $p"
        WCMD+=("$p")
    done
}

# --- commands ---------------------------------------------------------------------------------
do_start() {
    local pid
    if pid="$(running_pid)"; then
        say "already running (pid $pid); 'termux/watch.sh stop' first to change its options"
        return 0
    fi
    command -v kgsearch >/dev/null 2>&1 || (( DRY_RUN )) || fail "kgsearch is not on PATH; run termux/install.sh first"
    watch_cmd
    if (( ! DRY_RUN )); then
        mkdir -p "$DATA_DIR" || fail "cannot create $DATA_DIR"
        if [[ -f "$LOG" ]] && (( $(wc -c < "$LOG") > MAX_LOG_BYTES )); then
            mv -f "$LOG" "$LOG.1"
        fi
    fi
    if (( WAKE )); then
        if command -v termux-wake-lock >/dev/null 2>&1; then
            run termux-wake-lock || note "termux-wake-lock failed; the watcher runs without it"
            (( DRY_RUN )) || : > "$WAKEFILE"
        else
            note "termux-wake-lock not found (not Termux?); running without a wake lock"
        fi
    fi
    say "starting: ${WCMD[*]}"
    if (( DRY_RUN )); then
        printf '+ nohup'; printf ' %q' "${WCMD[@]}"; printf ' >> %q 2>&1 &\n' "$LOG"
        return 0
    fi
    nohup "${WCMD[@]}" >> "$LOG" 2>&1 < /dev/null &
    pid=$!
    printf '%s\n' "$pid" > "$PIDFILE"
    sleep "$SETTLE"
    if ! kill -0 "$pid" 2>/dev/null; then
        rm -f "$PIDFILE"
        fail "kgsearch watch stopped at once; its message: $(tail -n 1 "$LOG" 2>/dev/null)"
    fi
    say "watching (pid $pid); log: $LOG"
}

do_stop() {
    local pid
    if ! pid="$(running_pid)"; then
        say "not running"
        rm -f "$PIDFILE"
    else
        say "stopping pid $pid"
        run kill -TERM "$pid" || true
        if (( ! DRY_RUN )); then
            local i
            for (( i = 0; i < STOP_WAIT * 10; i++ )); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -0 "$pid" 2>/dev/null && fail "pid $pid did not stop within ${STOP_WAIT}s; 'kill -9 $pid' is safe (nothing is lost)"
            rm -f "$PIDFILE"
        fi
    fi
    if [[ -f "$WAKEFILE" ]]; then
        run termux-wake-unlock || true
        (( DRY_RUN )) || rm -f "$WAKEFILE"
    fi
    return 0
}

do_status() {
    local pid
    if pid="$(running_pid)"; then
        echo "running: pid $pid"
    else
        echo "not running (start it with: termux/watch.sh start)"
    fi
    [[ -f "$WAKEFILE" ]] && echo "wake lock: held"
    [[ -f "$BOOT_SCRIPT" ]] && echo "at boot: $BOOT_SCRIPT"
    if [[ -f "$LOG" ]]; then
        echo "last lines of $LOG:"
        tail -n 5 "$LOG" | sed 's/^/  /'
    fi
    [[ -n "${pid:-}" ]]
}

do_boot() {
    watch_cmd
    local args=() p
    [[ -n "$DB" ]] && args+=(--db "$(abspath "$DB")")
    [[ -n "$BACKEND" ]] && args+=(--backend "$BACKEND")
    [[ -n "$INTERVAL" ]] && args+=(--interval "$INTERVAL")
    (( WAKE )) && args+=(--wake-lock)
    for p in "${PATHS[@]}"; do args+=("$(abspath "$p")"); done
    say "writing $BOOT_SCRIPT (Termux:Boot runs it after the phone starts)"
    if (( DRY_RUN )); then
        printf '+ (write boot script %s)\n' "$BOOT_SCRIPT"
        return 0
    fi
    mkdir -p "$BOOT_DIR" || fail "cannot create $BOOT_DIR"
    {
        printf '#!%s\n' "$(command -v bash)"
        printf '# Start kgsearch watch at boot; written by termux/watch.sh on %s. Remove: watch.sh unboot\n' \
            "$(date '+%Y-%m-%d %H:%M')"
        printf 'export PATH=%q\n' "$PATH"
        [[ -n "${XDG_DATA_HOME:-}" ]] && printf 'export XDG_DATA_HOME=%q\n' "$XDG_DATA_HOME"
        [[ -n "${KGSEARCH_DB:-}" ]] && printf 'export KGSEARCH_DB=%q\n' "$KGSEARCH_DB"
        printf 'exec %q start' "$SELF"; (( ${#args[@]} )) && printf ' %q' "${args[@]}"; printf '\n'
    } > "$BOOT_SCRIPT.tmp.$$"
    chmod 700 "$BOOT_SCRIPT.tmp.$$"
    mv -f "$BOOT_SCRIPT.tmp.$$" "$BOOT_SCRIPT"
    say "done; install the Termux:Boot app and open it once so Android lets it run at boot"
}

do_unboot() {
    if [[ -f "$BOOT_SCRIPT" ]]; then
        run rm -f "$BOOT_SCRIPT"
        say "removed $BOOT_SCRIPT"
    else
        say "no boot script"
    fi
}

case "$CMD" in
    start) do_start ;;
    stop) do_stop ;;
    status) do_status ;;
    boot) do_boot ;;
    unboot) do_unboot ;;
esac
