#!/usr/bin/env bash
# Run kgsearch's on-device benchmark and keep its JSON, named by device and date, so results
# from different phones can be compared.
#
#   termux/bench.sh                 # your index if you have one, else the built-in corpus
#   termux/bench.sh --demo          # always the built-in corpus (comparable across phones)
#   termux/bench.sh --db PATH       # a specific index
#
# Saves <data dir>/bench/bench-<device>-<YYYYmmdd-HHMMSS>.json and prints the path.
# The device name is Android's manufacturer + model (getprop) or the host name elsewhere.
# Exit codes: 0 saved, 1 kgsearch bench failed or gave no JSON, 2 bad usage.
set -euo pipefail

PROG="bench.sh"
DATA_DIR="${XDG_DATA_HOME:-$HOME/.local/share}/kgsearch"
OUT_DIR="$DATA_DIR/bench"
PY="${PYTHON:-python3}"
DB=""
DEMO=0
EXTRA=()

usage() {
    cat <<EOF
Usage: termux/bench.sh [--db PATH | --demo] [--out-dir DIR] [--queries N] [-- KGSEARCH-BENCH-ARGS...]

Runs 'kgsearch bench --json' and saves the result as
  $OUT_DIR/bench-<device>-<date>.json

Options:
  --db PATH        benchmark this index (default: \$KGSEARCH_DB, else the data dir's index.db,
                   when it exists)
  --demo           benchmark the built-in corpus even if you have an index
  --out-dir DIR    where to save (default: $OUT_DIR)
  --queries N      queries to time (passed to kgsearch bench)
  -h, --help       show this help
EOF
}

note() { printf '%s: %s\n' "$PROG" "$*" >&2; }
fail() { note "$*"; exit 1; }
usage_error() { note "$*; see --help"; exit 2; }

while (( $# )); do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --db) (( $# >= 2 )) || usage_error "--db needs a path"; DB="$2"; shift ;;
        --db=*) DB="${1#--db=}" ;;
        --demo) DEMO=1 ;;
        --out-dir) (( $# >= 2 )) || usage_error "--out-dir needs a folder"; OUT_DIR="$2"; shift ;;
        --out-dir=*) OUT_DIR="${1#--out-dir=}" ;;
        --queries) (( $# >= 2 )) || usage_error "--queries needs a number"; EXTRA+=(--queries "$2"); shift ;;
        --queries=*) EXTRA+=(--queries "${1#--queries=}") ;;
        --) shift; EXTRA+=("$@"); break ;;
        *) usage_error "unknown option '$1'" ;;
    esac
    shift
done
[[ -n "$DB" ]] && (( DEMO )) && usage_error "--db and --demo exclude each other"
command -v kgsearch >/dev/null 2>&1 || fail "kgsearch is not on PATH; run termux/install.sh first"

# Which index: explicit --db (must exist), else the user's default index if it exists, else the
# built-in corpus (kgsearch bench without --db).
args=(bench)
if [[ -n "$DB" ]]; then
    [[ -f "$DB" ]] || fail "no index at $DB; build one with 'kgsearch --db $DB index PATH', or drop --db"
    args+=(--db "$DB")
    what="index $DB"
elif (( ! DEMO )) && [[ -f "${KGSEARCH_DB:-$DATA_DIR/index.db}" ]]; then
    DB="${KGSEARCH_DB:-$DATA_DIR/index.db}"
    args+=(--db "$DB")
    what="your index $DB"
else
    what="the built-in corpus"
fi
args+=(--json)
(( ${#EXTRA[@]} )) && args+=("${EXTRA[@]}")

device=""
if command -v getprop >/dev/null 2>&1; then
    device="$(getprop ro.product.manufacturer 2>/dev/null || true) $(getprop ro.product.model 2>/dev/null || true)"
fi
[[ -n "${device// /}" ]] || device="$(uname -n 2>/dev/null || echo unknown)"
# file-name safe: letters, digits, dot, dash, underscore; spaces and the rest become '-'
device="$(printf '%s' "$device" | tr -cs 'A-Za-z0-9._-' '-' | sed 's/^-*//; s/-*$//')"
[[ -n "$device" ]] || device="unknown"
stamp="$(date '+%Y%m%d-%H%M%S')"

mkdir -p "$OUT_DIR" || fail "cannot create $OUT_DIR"
out="$OUT_DIR/bench-$device-$stamp.json"
tmp="$out.part"
trap 'rm -f "$tmp"' EXIT

printf '==> benchmarking %s on %s (this takes a minute or two)\n' "$what" "$device"
rc=0
kgsearch "${args[@]}" > "$tmp" || rc=$?
(( rc == 0 )) || fail "'kgsearch ${args[*]}' failed (exit $rc); its message is above"
[[ -s "$tmp" ]] || fail "'kgsearch ${args[*]}' printed nothing; expected JSON"

# Check it is JSON and print a one-line summary (python is there wherever kgsearch runs).
command -v "$PY" >/dev/null 2>&1 || PY="python"
summary="$("$PY" - "$tmp" <<'EOF'
import json, sys
try:
    with open(sys.argv[1], encoding="utf-8") as fh:
        r = json.load(fh)
except ValueError as exc:
    print(f"not JSON: {exc}")
    sys.exit(3)
q = r.get("query_ms") or {}
parts = []
if q:
    parts.append("query p50 %s ms, p95 %s ms, p99 %s ms" % (q.get("p50"), q.get("p95"), q.get("p99")))
for key, label in (("index_seconds", "index %s s"), ("db_mb", "db %s MB"),
                   ("peak_rss_mb", "peak RSS %s MB"), ("cold_start_ms", "cold start %s ms")):
    if r.get(key) is not None:
        parts.append(label % r[key])
print("; ".join(parts) or "(no summary fields)")
EOF
)" || { rc=$?; fail "'kgsearch ${args[*]}' did not print valid JSON (${summary:-python failed with exit $rc})"; }

mv -f "$tmp" "$out"
trap - EXIT
printf '%s\n' "$summary"
printf 'saved %s\n' "$out"
