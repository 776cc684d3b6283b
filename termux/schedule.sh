#!/usr/bin/env bash
# Reindex kgsearch on a schedule, in Termux (or with cron on any Linux box).
#
#   termux/schedule.sh install [--method job|cron] [--every MINUTES] [--db PATH] [--wake-lock] [PATH...]
#   termux/schedule.sh status
#   termux/schedule.sh run          # one reindex now, exactly as the schedule runs it
#   termux/schedule.sh remove
#
# install writes a small job script, <data dir>/reindex-job.sh, and schedules it with
#   --method job : termux-job-scheduler (Termux:API app + 'pkg install termux-api').
#                  Android's JobScheduler: survives reboots, respects battery saving, runs
#                  roughly every period (never more often than every 15 minutes), also offline.
#   --method cron: cronie + termux-services ('pkg install cronie termux-services',
#                  'sv-enable crond', a crontab line). Exact times, but crond only runs while
#                  Termux is alive. Also works on a laptop (--no-pkg).
#   default      : job when termux-job-scheduler is installed, else cron.
# The job runs 'kgsearch index' (no PATH: reindex the roots already in the index, as recorded by
# earlier 'kgsearch index PATH' runs) or 'kgsearch index PATH...' when paths are given.
#
# Log: <data dir>/reindex.log, one start line and one result line per run plus kgsearch's own
# messages; rotated to reindex.log.1 past 256 KB (so at most ~512 KB on disk).
# Exit code 75 from kgsearch means another index run holds the lock (an overlapping run, or a
# manual 'kgsearch index'): logged as "skipped" and treated as success.
#
# Android caveats (details in termux/README.md):
#  - Battery optimisation (Doze) postpones background work: set Termux (and Termux:API) to
#    "Unrestricted" battery use in Android's app settings.
#  - The phantom-process killer (Android 12+) kills background child processes of apps, which
#    includes crond and long index runs ("[Process completed (signal 9)]"): disable it with
#    Developer options > "Disable child process restrictions" (Android 14+) or adb (12/13).
#  - Without a wake lock the CPU may sleep mid-run with the screen off: --wake-lock makes each
#    run hold 'termux-wake-lock' and release it with 'termux-wake-unlock' when done (this also
#    releases a wake lock you took by hand). For cron, crond itself only survives if Termux
#    does: keep Termux running (a wake lock from its notification helps).
set -euo pipefail

# shellcheck disable=SC2034  # (PROG: read by common.sh)
PROG="schedule.sh"
DATA_DIR="${XDG_DATA_HOME:-$HOME/.local/share}/kgsearch"
JOB="$DATA_DIR/reindex-job.sh"
CONF="$DATA_DIR/schedule.conf"
LOG="$DATA_DIR/reindex.log"
MARK="# kgsearch-reindex (managed by termux/schedule.sh; remove with: schedule.sh remove)"
MIN_JOB_MINUTES=15
API_TIMEOUT=30   # termux-api commands hang when the Termux:API app is missing

usage() {
    cat <<EOF
Usage: termux/schedule.sh COMMAND [options] [PATH...]

Commands:
  install [PATH...]   schedule 'kgsearch index [PATH...]' (no PATH: the roots already indexed)
  status              show the schedule and the last runs (exit 1 when nothing is scheduled)
  run                 reindex once now, logging like the scheduled job
  remove              cancel the schedule and delete the job script (the log is kept)

Options for install:
  --method job|cron   termux-job-scheduler (Termux:API) or cronie+crontab
                      (default: job if termux-job-scheduler is installed, else cron)
  --every MINUTES     period (default 60). job: at least $MIN_JOB_MINUTES. cron: a divisor of 60,
                      or whole hours dividing 24 (e.g. 15, 30, 60, 120, 360, 1440)
  --db PATH           index to update (default: \$KGSEARCH_DB or the data dir)
  --wake-lock         hold termux-wake-lock while each run works
  --job-id N          termux-job-scheduler job id (default 7075)
  --no-pkg            do not 'pkg install' termux-api / cronie termux-services
Options for all commands:
  --dry-run           print the commands that change things, run none of them
  -h, --help          show this help

Files: $JOB, $LOG (rotated at 256 KB)
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
    install|remove|status|run) shift ;;
    "") usage >&2; exit 2 ;;
    *) usage_error "unknown command '$CMD'" ;;
esac

METHOD=""
EVERY=60
DB=""
WAKE=0
JOB_ID=7075
DO_PKG=1
DRY_RUN=0
PATHS=()
while (( $# )); do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --method) (( $# >= 2 )) || usage_error "--method needs job or cron"; METHOD="$2"; shift ;;
        --method=*) METHOD="${1#--method=}" ;;
        --every) (( $# >= 2 )) || usage_error "--every needs a number of minutes"; EVERY="$2"; shift ;;
        --every=*) EVERY="${1#--every=}" ;;
        --db) (( $# >= 2 )) || usage_error "--db needs a path"; DB="$2"; shift ;;
        --db=*) DB="${1#--db=}" ;;
        --job-id) (( $# >= 2 )) || usage_error "--job-id needs a number"; JOB_ID="$2"; shift ;;
        --job-id=*) JOB_ID="${1#--job-id=}" ;;
        --wake-lock) WAKE=1 ;;
        --no-pkg) DO_PKG=0 ;;
        --dry-run) DRY_RUN=1 ;;
        --) shift; PATHS+=("$@"); break ;;
        -*) usage_error "unknown option '$1'" ;;
        *) PATHS+=("$1") ;;
    esac
    shift
done
if [[ "$CMD" != install ]] && { (( ${#PATHS[@]} )) || [[ -n "$DB" ]] || (( WAKE )); }; then
    usage_error "paths, --db and --wake-lock belong to 'install'"
fi

# --- shared helpers ---------------------------------------------------------------------------
CONF_METHOD=""
CONF_JOB_ID=""
CONF_EVERY=""
read_conf() {
    [[ -f "$CONF" ]] || return 1
    local key value
    while IFS='=' read -r key value; do
        case "$key" in
            method) CONF_METHOD="$value" ;;
            job_id) CONF_JOB_ID="$value" ;;
            every) CONF_EVERY="$value" ;;
        esac
    done < "$CONF"
}

api() {  # termux-api call with a timeout: the command hangs when the Termux:API app is missing
    local rc=0
    if command -v timeout >/dev/null 2>&1; then
        timeout "$API_TIMEOUT" "$@" || rc=$?
    else
        "$@" || rc=$?
    fi
    if (( rc == 124 )); then
        note "$1 did not answer within ${API_TIMEOUT}s: install the Termux:API app (from the same place as Termux) and open it once"
    fi
    return "$rc"
}

run_api() {  # run() for termux-api commands
    printf '+'
    printf ' %q' "$@"
    printf '\n'
    if (( DRY_RUN )); then
        return 0
    fi
    api "$@"
}

cron_expr() {  # minutes -> crontab time fields
    local m="$1"
    if (( m < 60 )) && (( 60 % m == 0 )); then
        printf '*/%d * * * *\n' "$m"
    elif (( m % 60 == 0 )) && (( 24 % (m / 60) == 0 )); then
        if (( m == 60 )); then printf '0 * * * *\n'; else printf '0 */%d * * *\n' $(( m / 60 )); fi
    else
        return 1
    fi
}

crontab_without_ours() {  # current crontab minus our lines (empty when there is none)
    crontab -l 2>/dev/null | grep -vF -e "$MARK" -e "$JOB" || true
}

cron_remove() {
    command -v crontab >/dev/null 2>&1 || return 0
    crontab -l 2>/dev/null | grep -qF "$JOB" || return 0
    local tmp
    tmp="$(mktemp "${TMPDIR:-/tmp}/kgsearch-cron.XXXXXX")"
    crontab_without_ours > "$tmp"
    say "removing the crontab line"
    run crontab "$tmp" || { rm -f "$tmp"; fail "crontab could not be updated; edit it with 'crontab -e' and delete the line with $JOB"; }
    rm -f "$tmp"
}

job_remove() {
    local id="$1"
    command -v termux-job-scheduler >/dev/null 2>&1 || { note "termux-job-scheduler not found; nothing to cancel"; return 0; }
    say "cancelling termux-job-scheduler job $id"
    run_api termux-job-scheduler --cancel --job-id "$id" \
        || fail "could not cancel job $id; list jobs with 'termux-job-scheduler --pending'"
}

write_job() {
    local bash_path kcmd=(kgsearch)
    bash_path="$(command -v bash)"
    [[ -n "$DB" ]] && kcmd+=(--db "$DB")
    kcmd+=(index)
    (( ${#PATHS[@]} )) && kcmd+=("${PATHS[@]}")
    local tmp="$JOB.tmp.$$"
    {
        printf '#!%s\n' "$bash_path"
        printf '# kgsearch reindex job, written by termux/schedule.sh on %s.\n' "$(date '+%Y-%m-%d %H:%M')"
        printf '# Change it with: schedule.sh install ...   Remove it with: schedule.sh remove\n'
        printf 'export PATH=%q\n' "$PATH"
        # cron and the job scheduler start with a bare environment: keep the index location
        [[ -n "${XDG_DATA_HOME:-}" ]] && printf 'export XDG_DATA_HOME=%q\n' "$XDG_DATA_HOME"
        [[ -n "${KGSEARCH_DB:-}" ]] && printf 'export KGSEARCH_DB=%q\n' "$KGSEARCH_DB"
        printf 'LOG=%q\n' "$LOG"
        printf 'CMD=('; printf ' %q' "${kcmd[@]}"; printf ' )\n'
        printf 'WAKE=%d\n' "$WAKE"
        cat <<'BODY'
MAX_LOG_BYTES=262144
set -u
ts() { date '+%Y-%m-%d %H:%M:%S'; }
mkdir -p "$(dirname "$LOG")"
if [[ -f "$LOG" ]] && (( $(wc -c < "$LOG") > MAX_LOG_BYTES )); then
    mv -f "$LOG" "$LOG.1"
fi
if (( WAKE )); then
    termux-wake-lock || true
    trap 'termux-wake-unlock || true' EXIT
fi
start=$(date +%s)
echo "$(ts) start: ${CMD[*]}" >> "$LOG"
rc=0
"${CMD[@]}" >> "$LOG" 2>&1 || rc=$?
secs=$(( $(date +%s) - start ))
case $rc in
    0) echo "$(ts) ok (${secs}s)" >> "$LOG" ;;
    75) echo "$(ts) skipped: another kgsearch index run holds the lock (exit 75)" >> "$LOG"; rc=0 ;;
    *) echo "$(ts) FAILED: exit $rc after ${secs}s (kgsearch's message is above)" >> "$LOG" ;;
esac
exit $rc
BODY
    } > "$tmp"
    chmod 700 "$tmp"
    mv -f "$tmp" "$JOB"
}

# --- commands ---------------------------------------------------------------------------------
do_install() {
    if [[ -z "$METHOD" ]]; then
        if command -v termux-job-scheduler >/dev/null 2>&1; then METHOD=job; else METHOD=cron; fi
        say "method: $METHOD (choose with --method job|cron)"
    fi
    [[ "$METHOD" == job || "$METHOD" == cron ]] || usage_error "--method must be job or cron, not '$METHOD'"
    if ! [[ "$EVERY" =~ ^[0-9]+$ ]] || (( 10#$EVERY == 0 )); then
        usage_error "--every must be a whole number of minutes, not '$EVERY'"
    fi
    [[ "$JOB_ID" =~ ^[0-9]+$ ]] || usage_error "--job-id must be a number, not '$JOB_ID'"
    EVERY=$(( 10#$EVERY ))
    JOB_ID=$(( 10#$JOB_ID ))
    local expr=""
    if [[ "$METHOD" == job ]]; then
        (( EVERY >= MIN_JOB_MINUTES )) \
            || usage_error "termux-job-scheduler cannot run more often than every $MIN_JOB_MINUTES minutes (an Android limit); use --every $MIN_JOB_MINUTES or more, or --method cron"
    else
        expr="$(cron_expr "$EVERY")" \
            || usage_error "--every $EVERY cannot be written as a crontab schedule; use a divisor of 60 (5, 10, 15, 20, 30) or whole hours dividing 24 (60, 120, 180, 240, 360, 480, 720, 1440)"
    fi
    local i
    for i in "${!PATHS[@]}"; do
        PATHS[i]="$(abspath "${PATHS[i]}")"
        [[ -e "${PATHS[i]}" ]] || fail "no such file or folder: ${PATHS[i]}"
    done
    [[ -n "$DB" ]] && DB="$(abspath "$DB")"
    command -v kgsearch >/dev/null 2>&1 || (( DRY_RUN )) \
        || fail "kgsearch is not on PATH; run termux/install.sh first"

    # a schedule made with the other method is replaced, not doubled
    if read_conf && [[ -n "$CONF_METHOD" && "$CONF_METHOD" != "$METHOD" ]]; then
        say "replacing the existing $CONF_METHOD schedule"
        if [[ "$CONF_METHOD" == job ]]; then job_remove "${CONF_JOB_ID:-$JOB_ID}"; else cron_remove; fi
    fi

    if (( DO_PKG )) && command -v pkg >/dev/null 2>&1; then
        local pkgs=()
        if [[ "$METHOD" == job ]]; then pkgs=(termux-api); else pkgs=(cronie termux-services); fi
        say "installing ${pkgs[*]} with pkg"
        local rc=0
        run pkg install -y "${pkgs[@]}" || rc=$?
        (( rc == 0 )) || fail "'pkg install -y ${pkgs[*]}' failed (exit $rc); check the network or run 'termux-change-repo', then rerun"
    elif (( DO_PKG )); then
        note "pkg not found (not Termux?): skipping package installation"
    fi

    say "writing $JOB"
    if (( DRY_RUN )); then
        printf '+ (write job script %s)\n' "$JOB"
    else
        mkdir -p "$DATA_DIR" || fail "cannot create $DATA_DIR"
        write_job
    fi

    if [[ "$METHOD" == job ]]; then
        command -v termux-job-scheduler >/dev/null 2>&1 || (( DRY_RUN )) \
            || fail "termux-job-scheduler not found: install the Termux:API app and 'pkg install termux-api' (or use --method cron)"
        say "scheduling with termux-job-scheduler every $EVERY minutes (job id $JOB_ID)"
        local out rc=0
        out="$(run_api termux-job-scheduler --job-id "$JOB_ID" --script "$JOB" \
                --period-ms $(( EVERY * 60000 )) --persisted true --network none 2>&1)" || rc=$?
        [[ -n "$out" ]] && printf '%s\n' "$out"
        if (( rc != 0 )) || grep -qE 'response 0|No such file|Cannot (read|execute)' <<<"$out"; then
            fail "termux-job-scheduler did not accept the job (exit $rc); check that the Termux:API app is installed and allowed to run in the background"
        fi
    else
        if command -v sv-enable >/dev/null 2>&1; then
            say "enabling crond (termux-services)"
            run sv-enable crond \
                || note "could not start crond; close and reopen Termux once (the service supervisor starts with a new session), then run: sv-enable crond"
        else
            note "sv-enable not found: make sure crond is running (Termux: pkg install termux-services; sv-enable crond)"
        fi
        command -v crontab >/dev/null 2>&1 || (( DRY_RUN )) \
            || fail "crontab not found; run 'pkg install cronie' (or drop --no-pkg)"
        say "adding the crontab line: $expr $JOB"
        local tmp
        tmp="$(mktemp "${TMPDIR:-/tmp}/kgsearch-cron.XXXXXX")"
        { crontab_without_ours; printf '%s\n%s %s\n' "$MARK" "$expr" "$JOB"; } > "$tmp"
        run crontab "$tmp" || { rm -f "$tmp"; fail "crontab rejected the new table; check it with 'crontab -l'"; }
        rm -f "$tmp"
    fi

    if (( ! DRY_RUN )); then
        printf 'method=%s\nevery=%s\njob_id=%s\n' "$METHOD" "$EVERY" "$JOB_ID" > "$CONF"
    fi
    say "scheduled: kgsearch reindex every $EVERY minutes ($METHOD); log: $LOG"
    cat <<EOF
Android may still stop it. Once, in Android's settings:
  - Apps > Termux (and Termux:API) > Battery: Unrestricted
  - Android 12+: disable the phantom-process killer (see termux/README.md)
Check later with: termux/schedule.sh status
EOF
}

do_remove() {
    local method="$METHOD"
    read_conf || true
    [[ -z "$method" ]] && method="$CONF_METHOD"
    local id="${CONF_JOB_ID:-$JOB_ID}"
    if [[ -z "$method" && ! -f "$JOB" ]]; then
        cron_remove
        say "nothing is scheduled"
        return 0
    fi
    [[ "$method" == job ]] && job_remove "$id"
    cron_remove
    say "deleting $JOB"
    run rm -f "$JOB" "$CONF"
    say "removed; the log stays in $LOG"
}

do_status() {
    local scheduled=0
    if read_conf; then
        scheduled=1
        echo "schedule: every $CONF_EVERY minutes with $CONF_METHOD"
        echo "job script: $JOB"
        sed -n 's/^CMD=( \(.*\) )$/command: \1/p' "$JOB" 2>/dev/null || true
        if [[ "$CONF_METHOD" == job ]]; then
            if command -v termux-job-scheduler >/dev/null 2>&1; then
                local out
                out="$(api termux-job-scheduler --pending 2>&1 || true)"
                if grep -q "Job ${CONF_JOB_ID}:" <<<"$out"; then
                    echo "android: job ${CONF_JOB_ID} is pending"
                else
                    echo "android: job ${CONF_JOB_ID} is NOT pending (run 'schedule.sh install' again)"
                fi
            else
                echo "android: termux-job-scheduler not found"
            fi
        else
            if command -v crontab >/dev/null 2>&1 && crontab -l 2>/dev/null | grep -qF "$JOB"; then
                echo "crontab: $(crontab -l 2>/dev/null | grep -F "$JOB" | grep -vF "$MARK")"
            else
                echo "crontab: no line for the job (run 'schedule.sh install' again)"
            fi
        fi
    else
        echo "schedule: none (set one up with: termux/schedule.sh install)"
    fi
    if [[ -f "$LOG" ]]; then
        echo "last runs ($LOG):"
        grep -E '^[0-9-]+ [0-9:]+ (ok|skipped|FAILED)' "$LOG" | tail -n 5 | sed 's/^/  /' || true
    else
        echo "last runs: none yet"
    fi
    return $(( scheduled ? 0 : 1 ))
}

do_run() {
    [[ -x "$JOB" ]] || fail "no job script at $JOB; run 'termux/schedule.sh install' first"
    local rc=0
    "$JOB" || rc=$?
    tail -n 1 "$LOG" 2>/dev/null || true
    return "$rc"
}

case "$CMD" in
    install) do_install ;;
    remove) do_remove ;;
    status) do_status ;;
    run) do_run ;;
esac
