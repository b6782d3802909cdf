# shellcheck shell=bash
# What geode's scripts share; each sources it from the repository root (`. scripts/lib.sh`).

# start_fixture NAME BIN ROOT DIR ADDR...: starts BIN/geode-fixture serving the capsules under
# ROOT on port 0 of each loopback ADDR, its listening lines in DIR/listening and its log in
# DIR/fixture.log. Sets `server` (its pid) and `addrs` (ADDR:PORT, in the order given). Exits
# with NAME's message and the fixture's log when not every address listens within a minute.
# The array `fixture_args`, when set, adds its words to the fixture's command line (e.g.
# --latency-ms 100).
start_fixture() {
  local name=$1 bin=$2 root=$3 dir=$4
  shift 4
  local want=$# listen=() a
  for a in "$@"; do listen+=(--listen "$a:0"); done
  : >"$dir/listening" # exists before the server writes to it: the wait below reads it at once
  "$bin/geode-fixture" --root "$root" "${listen[@]}" ${fixture_args[@]+"${fixture_args[@]}"} >"$dir/listening" 2>"$dir/fixture.log" &
  server=$!
  for _ in $(seq 600); do
    [ "$(grep -c '^listening on' "$dir/listening" || true)" -ge "$want" ] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  mapfile -t addrs < <(sed -n 's/^listening on //p' "$dir/listening")
  if [ "${#addrs[@]}" -lt "$want" ]; then
    echo "$name: geode-fixture did not start on $want addresses:" >&2
    cat "$dir/fixture.log" >&2
    exit 1
  fi
}

# loopback PREFIX K: the addresses PREFIX.1 .. PREFIX.K, one a line.
loopback() {
  local i
  for i in $(seq 1 "$2"); do echo "$1.$i"; done
}
