#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR disable=SC2016,SC2034  # conditions are eval'ed by check()
# tests/umami/umami-behaviour.sh: records the Umami 2.10.0 /api/send behaviours
# that the workers rely on, against a real Umami (scripts/umami-build) in a
# private stack (scripts/stack) on a random free base port.
#
# Usage: tests/umami/umami-behaviour.sh        (KEEP_STACK=1 keeps the stack dir)
# Prints one line per assertion and "N passed, M failed" last; exits non-zero
# on any failure.
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STACK="$REPO/scripts/stack"
# shellcheck source=../../scripts/lib/common.sh
LOG_PREFIX=umami-behaviour source "$REPO/scripts/lib/common.sh"

PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); printf 'ok   - %s\n' "$1"; }
fail() { FAILED=$((FAILED + 1)); printf 'FAIL - %s%s\n' "$1" "${2:+: $2}"; }
# check NAME 'SHELL-CONDITION': pass when the (eval'ed) condition holds.
check() { if eval "$2"; then pass "$1"; else fail "$1" "$LAST"; fi; }
LAST=""

finish() {
    echo "$PASSED passed, $FAILED failed"
    [[ $FAILED == 0 ]]
}

# ---- stack on a free random base port ----------------------------------------
ports_free() {
    local n=$1 p
    for p in "$n" $((n + 1)) $((n + 2)) $((n + 10)); do port_in_use "$p" && return 1; done
    return 0
}
BASE=""
for _ in $(seq 1 50); do
    n=$((10000 + (RANDOM % 2000) * 10))  # below the ephemeral port range (32768+)
    if ports_free "$n"; then BASE=$n; break; fi
done
[[ -n "$BASE" ]] || { fail "find free ports"; finish; exit 1; }

SDIR=$(mktemp -d /tmp/umami-behaviour.XXXXXX)
chmod 755 "$SDIR"
cleanup() {
    if [[ "${KEEP_STACK:-0}" == 1 ]]; then
        "$STACK" --dir "$SDIR" down >/dev/null 2>&1 || true
        echo "# stack dir kept: $SDIR"
    else
        "$STACK" --dir "$SDIR" down --purge >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

S() { "$STACK" --dir "$SDIR" --base-port "$BASE" "$@"; }

t0=$(now_ms)
if ! S up >"$SDIR.up.log" 2>&1; then
    cat "$SDIR.up.log"
    fail "scripts/stack up" "see above"
    finish; exit 1
fi
echo "# stack up in $(( $(now_ms) - t0 )) ms (base port $BASE, dir $SDIR)"
rm -f "$SDIR.up.log"

PGPORT=$((BASE + 2))
U="http://127.0.0.1:$((BASE + 10))"
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGPORT" -U postgres -d "${DB:-umami}" -c "$1"; }

WEBSITE=$(cat /proc/sys/kernel/random/uuid)
UNKNOWN=$(cat /proc/sys/kernel/random/uuid)
OWNER=$(sql "SELECT user_id FROM \"user\" WHERE username = 'admin'")
sql "INSERT INTO website (website_id, name, domain, user_id, created_at)
     VALUES ('$WEBSITE', 'behaviour test', 'example.com', '$OWNER', now())" >/dev/null \
    || { fail "insert website row"; finish; exit 1; }

UA_CHROME='Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120 Safari/537.36'
UA_BOT='Googlebot/2.1 (+http://www.google.com/bot.html)'

# payload WEBSITE [URL] [TYPE] [DATA-JSON]
payload() {
    local w=$1 url=${2:-/x} type=${3:-event} data=${4:-'{"plan":"pro"}'}
    printf '{"type":"%s","payload":{"website":"%s","hostname":"example.com","url":"%s","language":"en-US","screen":"1920x1080","title":"t","referrer":"","name":"signup","data":%s}}' \
        "$type" "$w" "$url" "$data"
}

# send BODY [IP] [UA] [extra curl args...]: sets CODE, BODY, CTYPE
CODE="" BODY="" CTYPE=""
send() {
    local body=$1 ip=${2:-203.0.113.7} ua=${3:-$UA_CHROME}; shift 3 2>/dev/null || shift $#
    local out
    out=$(mktemp)
    local meta
    meta=$(curl -s -m 20 -o "$out" -w '%{http_code} %{content_type}' -X POST "$U/api/send" \
        -H 'Content-Type: application/json' -H "User-Agent: $ua" -H "X-Forwarded-For: $ip" \
        "$@" --data-binary "$body")
    CODE=${meta%% *}
    CTYPE=${meta#* }
    BODY=$(cat "$out")
    rm -f "$out"
    local shown=${BODY//$'\n'/\\n}
    LAST="status=$CODE type=$CTYPE body=${shown:0:160}"
    echo "#   -> $LAST"
}

probe() { send "$(payload "$UNKNOWN")" 198.51.100.77; }

heartbeat() {
    CODE=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$U/api/heartbeat")
    LAST="status=$CODE"
    echo "#   heartbeat -> $CODE"
}

is_jwt() { [[ "$1" =~ ^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$ ]]; }
jwt_field() { # jwt_field TOKEN FIELD
    local p=${1#*.}; p=${p%%.*}
    p=$(printf '%s' "$p" | tr '_-' '/+')
    while (( ${#p} % 4 )); do p+="="; done
    printf '%s' "$p" | base64 -d 2>/dev/null \
        | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];console.log(v==null?"":v)})' "$2"
}
count() { sql "SELECT count(*) FROM $1 WHERE website_id = '$WEBSITE'${2:+ AND $2}"; }

# ---- 1. heartbeat ------------------------------------------------------------------
echo "# 1. GET /api/heartbeat"
heartbeat
check "1. heartbeat answers 200" '[[ $CODE == 200 ]]'

# ---- 2. valid event ----------------------------------------------------------------
echo "# 2. valid event from 203.0.113.7"
send "$(payload "$WEBSITE")" 203.0.113.7
TOKEN=$BODY
check "2a. valid send answers 200" '[[ $CODE == 200 ]]'
check "2b. body is a bare JWT token (text/plain)" '[[ $CTYPE == text/plain* ]] && is_jwt "$TOKEN"'
SESSION=$(jwt_field "$TOKEN" id)
E_X=$(count website_event "url_path = '/x' AND event_name = 'signup' AND event_type = 2 AND session_id = '$SESSION'")
LAST="matching events=$E_X session=$SESSION"
check "2c. website_event row stored (url_path /x, event_name signup, event_type 2)" '[[ $E_X == 1 ]]'
D_X=$(count event_data "event_key = 'plan' AND string_value = 'pro' AND data_type = 1 AND website_event_id = (SELECT event_id FROM website_event WHERE website_id = '$WEBSITE' AND url_path = '/x')")
LAST="$(sql "SELECT event_key, string_value, data_type FROM event_data WHERE website_id = '$WEBSITE'")"
check "2d. event_data row plan=pro stored" '[[ $D_X == 1 ]]'
S_X=$(count session "session_id = '$SESSION' AND country = 'US' AND subdivision1 = 'US-CA' AND city = 'San Francisco'")
LAST="$(sql "SELECT country, subdivision1, city, browser, os, device FROM session WHERE session_id = '$SESSION'")"
echo "#   session: $LAST"
check "2e. session row exists with test geo (US, US-CA, San Francisco)" '[[ $S_X == 1 ]]'

# ---- 3. cache token ------------------------------------------------------------------
echo "# 3. send with x-umami-cache"
send "$(payload "$WEBSITE" /y)" 203.0.113.7 "$UA_CHROME" -H "x-umami-cache: $TOKEN"
check "3a. send with x-umami-cache answers 200" '[[ $CODE == 200 ]]'
S2=$(jwt_field "$BODY" id)
N_S=$(count session)
E_Y=$(count website_event "url_path = '/y' AND session_id = '$SESSION'")
LAST="token session=$S2 first=$SESSION sessions=$N_S events(/y)=$E_Y"
check "3b. same session (token id, one session row, event stored on it)" \
    '[[ $S2 == "$SESSION" && $N_S == 1 && $E_Y == 1 ]]'

# ---- 4. unknown website ---------------------------------------------------------------
echo "# 4. unknown website id"
probe
check "4. unknown website answers 403 'Website not found: <id>.'" \
    '[[ $CODE == 403 && $BODY == *"Website not found: $UNKNOWN."* ]]'

# ---- 5. validation ----------------------------------------------------------------
echo "# 5. url longer than 500 chars"
LONG=/$(printf 'a%.0s' $(seq 1 520))
send "$(payload "$WEBSITE" "$LONG")" 203.0.113.7
check "5. url > 500 chars answers 400" '[[ $CODE == 400 ]]'

# ---- 6. bot --------------------------------------------------------------------------
echo "# 6. bot user agent"
before_e=$(count website_event); before_s=$(count session)
send "$(payload "$WEBSITE" /bot)" 198.51.100.8 "$UA_BOT"
check "6a. bot answers 200 with body {}" '[[ $CODE == 200 && $BODY == "{}" ]]'
after_e=$(count website_event); after_s=$(count session)
LAST="events $before_e -> $after_e, sessions $before_s -> $after_s"
check "6b. bot: nothing stored" '[[ $after_e == "$before_e" && $after_s == "$before_s" ]]'

# ---- 10. no /api/batch --------------------------------------------------------------------
# Added in 2.17: 2.10 answers 404 and stores nothing, so the replayer sends one by one.
echo "# 10. POST /api/batch (a JSON array of two sends)"
before_e=$(count website_event)
CODE=$(curl -s -m 20 -o /dev/null -w '%{http_code}' -X POST "$U/api/batch" \
    -H 'Content-Type: application/json' -H "User-Agent: $UA_CHROME" \
    --data-binary "[$(payload "$WEBSITE" /batch1),$(payload "$WEBSITE" /batch2)]")
LAST="status=$CODE, events $before_e -> $(count website_event)"
echo "#   -> $LAST"
check "10. /api/batch answers 404, nothing stored" \
    '[[ $CODE == 404 && $(count website_event) == "$before_e" ]]'

# ---- 9. 2.10 quirks ----------------------------------------------------------------------
echo "# 9. identify, 1e21 in data, long url"
send "$(payload "$WEBSITE" /x identify '{"plan":"pro"}')" 203.0.113.7
check "9a. identify send answers 500 (Umami 2.10 bug)" '[[ $CODE == 500 ]]'
echo "#   after the 500: session_data rows: $(count session_data)"
send "$(payload "$WEBSITE" /big event '{"n":1e21}')" 203.0.113.7
check "9b. event data with number 1e21 answers 500" '[[ $CODE == 500 ]]'
E_BIG=$(count website_event "url_path = '/big'"); D_BIG=$(count event_data "event_key = 'n'")
echo "#   after the 500: website_event rows for /big: $E_BIG, event_data rows n: $D_BIG"
send "$(payload "$WEBSITE" "$LONG")" 203.0.113.7
check "9c. url > 500 chars answers 400" '[[ $CODE == 400 ]]'

# ---- 8. read-only database -------------------------------------------------------------------
terminate_umami_conns() {
    DB=postgres sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = 'umami' AND pid <> pg_backend_pid()" >/dev/null
    sleep 0.5
}
echo "# 8. read-only database"
DB=postgres sql "ALTER DATABASE umami SET default_transaction_read_only = on" >/dev/null
terminate_umami_conns
heartbeat
send "$(payload "$WEBSITE" /ro)" 203.0.113.7
check "8a. read-only: known visitor answers 500" '[[ $CODE == 500 ]]'
send "$(payload "$WEBSITE" /ro)" 198.51.100.9
check "8b. read-only: new visitor answers 400 mentioning read-only" \
    '[[ $CODE == 400 && $BODY == *read-only* ]]'
probe
check "8c. read-only: unknown website still answers 403 Website not found" \
    '[[ $CODE == 403 && $BODY == *"Website not found"* ]]'
DB=postgres sql "ALTER DATABASE umami RESET default_transaction_read_only" >/dev/null
terminate_umami_conns
send "$(payload "$WEBSITE" /rw)" 203.0.113.7
check "8d. writable again: send answers 200" '[[ $CODE == 200 ]]'

# ---- 7. database down ------------------------------------------------------------------------
echo "# 7. pg stopped"
S stop pg >/dev/null 2>&1 || fail "scripts/stack stop pg"
heartbeat
check "7a. pg down: heartbeat still 200" '[[ $CODE == 200 ]]'
probe
check "7b. pg down: unknown website answers 400 \"Can't reach database server\"" \
    '[[ $CODE == 400 && $BODY == *"Can'"'"'t reach database server"* ]]'
send "$(payload "$WEBSITE" /down)" 203.0.113.7
check "7c. pg down: known website answers 400 \"Can't reach database server\"" \
    '[[ $CODE == 400 && $BODY == *"Can'"'"'t reach database server"* ]]'
send "$(payload "$WEBSITE" /down-cached)" 203.0.113.7 "$UA_CHROME" -H "x-umami-cache: $TOKEN"
check "7d. pg down: send with x-umami-cache answers 500 (session from token, insert fails)" \
    '[[ $CODE == 500 ]]'
S start pg >/dev/null 2>&1 || fail "scripts/stack start pg"
send "$(payload "$WEBSITE" /up-again)" 203.0.113.7
check "7e. pg back: send answers 200 again" '[[ $CODE == 200 ]]'

echo "# total $(( ($(now_ms) - t0) / 1000 )) s"
finish
