#!/usr/bin/env bash
# Runs the Python and Node examples against a real agentd server, each
# with its generated client package installed as a user would: builds
# agentd (or takes AGENTD_BIN), starts it on a free port with a fresh data
# folder, waits until it listens, runs both examples, and stops it.
# Python: a fresh virtual environment in a temporary folder gets
# clients/python (agentd-client) and the example's requirements, and mypy
# checks the example's types against the generated hints. Node: npm ci
# makes a fresh examples/node/node_modules with clients/typescript
# (@agentd/client) installed as a packed copy (install-links), and tsc
# checks the example's types against its declarations. Go: the generated
# module clients/go and examples/go build in GOPATH mode against Debian's
# packages of grpc-go and protobuf-go (golang-google-grpc-dev,
# golang-google-protobuf-dev; there is no Go module proxy to fetch from).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"

export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_NO_INPUT=1

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "--- examples: dependencies"
# A virtual environment, as docs/clients.md says: a system Python may refuse pip.
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet ./clients/python -r examples/python/requirements.txt </dev/null
"$work/venv/bin/mypy" --strict --cache-dir "$work/mypy" examples/python/ask_user_cycle.py
(cd examples/node && npm ci --no-audit --no-fund --loglevel=error && npm run --silent typecheck)
gopath="$work/gopath"
mkdir -p "$gopath/src/agentd/clients" "$gopath/src/agentd/examples"
cp -r clients/go "$gopath/src/agentd/clients/go"
cp -r examples/go "$gopath/src/agentd/examples/go"
(
  cd "$gopath"
  export GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" GOCACHE="$work/gocache" GOFLAGS=
  go vet agentd/clients/go/... agentd/examples/go
  go build -o "$work/go_example" agentd/examples/go
)

bin="${AGENTD_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --quiet --bin agentd
  target_dir="$(cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
  bin="$target_dir/debug/agentd"
fi

echo "--- examples: starting $bin"
log="$work/agentd.log"
"$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" >"$log" 2>&1 &
server_pid=$!

# The server logs its address once it is bound; a bound listener queues
# connections, so the examples can connect from then on.
address=""
for _ in $(seq 1 600); do
  address="$(grep -o 'listening on [0-9.]*:[0-9]*' "$log" | head -n 1 | cut -d ' ' -f 3 || true)"
  if [ -n "$address" ]; then
    break
  fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "agentd exited before listening:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$address" ]; then
  echo "agentd did not listen within 60 s:" >&2
  cat "$log" >&2
  exit 1
fi
echo "agentd listening on $address"

status=0
echo "--- examples: python"
"$work/venv/bin/python" examples/python/ask_user_cycle.py "$address" || status=1
echo "--- examples: node"
node examples/node/ask_user_cycle.js "$address" || status=1
echo "--- examples: go"
"$work/go_example" "$address" || status=1

if [ "$status" -ne 0 ]; then
  echo "--- agentd log" >&2
  cat "$log" >&2
fi
exit "$status"
