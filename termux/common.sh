# shellcheck shell=bash disable=SC2154  # (PROG and DRY_RUN: set by the script that sources this)
# Helpers shared by termux/install.sh, schedule.sh and watch.sh (sourced, not run). The script
# sets PROG (its name in messages) and DRY_RUN (1: print the commands that change things, run
# none of them) before it calls these.

say() { printf '==> %s\n' "$*"; }
note() { printf '%s: %s\n' "$PROG" "$*" >&2; }
fail() { note "$*"; exit 1; }
usage_error() { note "$*; see --help"; exit 2; }

# Print a command that changes something, then run it (only print it with --dry-run).
run() {
    printf '+'
    printf ' %q' "$@"
    printf '\n'
    if (( DRY_RUN )); then
        return 0
    fi
    "$@"
}

abspath() {
    case "$1" in
        /*) printf '%s\n' "$1" ;;
        *) printf '%s/%s\n' "$PWD" "${1#./}" ;;
    esac
}
