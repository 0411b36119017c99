#!/bin/bash
# Runs units of Redis's own Tcl test suite against tumbler, as an external
# server, one fresh tumbler per unit, and counts the results. Not part of
# `make test`: it needs a Redis source tree (the 7.0 tests), which CI cannot
# fetch. Failures because tumbler lacks a command ("unknown command") are
# expected; the rest are worth a look (and a minimal reproduction diffed
# against redis-server).
#
#   git clone -b 7.0.15 --depth 1 https://github.com/redis/redis /tmp/redis-src
#   compat/tcl/run.sh /tmp/redis-src unit/expire unit/pause unit/scripting
#
# BIN=redis runs redis-server instead of tumbler, for comparison; PORT
# (default 7390) is the port used. Logs: $OUT (default /tmp/tumbler-tcl).
# The harness's own ports (its test server and clients) are derived from
# PORT, so runs with different PORTs can go on at once.
#
# MODE=spawn lets the harness start the servers itself, as it starts
# redis-server, through a src/redis-server that runs tumbler with the
# harness's config file (its unixsocket included). That runs the units
# and tests tagged external:skip (acl, auth, info, networking...), each
# with a server of its own. ARGS adds
# test_helper options, such as --skiptest 'name' for a test that stops a
# unit with an exception (a stream command tumbler lacks).
set -u
src=${1:?usage: run.sh REDIS_SRC unit/...}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
port=${PORT:-7390}
out=${OUT:-/tmp/tumbler-tcl}
# a range of 1000 ports of the harness's own, after 32 for its test server
baseport=$((20000 + (port % 40) * 1000 + 32))
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/tests" "$work/tests"
# External mode flushes functions before each unit (before tumbler had
# FUNCTION, that failed; the catch is harmless now).
sed -i 's/^    r function flush$/    catch {r function flush}/' "$work/tests/support/server.tcl"
bin=${BIN:-}
if [ -z "$bin" ]; then
	bin="$work/tumbler"
	(cd "$root" && go build -o "$bin" ./cmd/tumbler) || exit 1
fi
tags=(--tags -needs:repl --tags -needs:save --tags -needs:pfdebug
	--tags -needs:config-maxmemory --tags -needs:local-process)
# DEBUG=yes runs the tests tagged needs:debug too, with DEBUG enabled on
# the server: the suite's dataset digests (debug_digest) are then real
# DEBUG DIGESTs, not the placeholders it compares otherwise. Tests of
# DEBUG subcommands tumbler lacks (LOADAOF, HTSTATS-KEY, JMAP,
# SET-DISABLE-DENY-SCRIPTS...) fail.
debugargs=()
if [ "${DEBUG:-}" = yes ]; then
	debugargs=(--enable-debug-command yes)
else
	tags+=(--tags -needs:debug)
fi
if [ "${MODE:-}" = spawn ]; then
	[ "$bin" != redis ] || bin=$(command -v redis-server)
	mkdir -p "$work/src"
	cat >"$work/src/redis-server" <<EOF
#!/bin/sh
# what the harness waits for in the server's output: " PID: <pid>", then
# (with wait_ready) "Ready to accept connections", which tumbler logs once
# it listens (on standard output; standard error merged here for failures).
# redis-server's logo, the PID line, comes once it listens; restart_server
# with wait_ready 0 connects as soon as it sees the PID. So the PID line
# waits for a new "Ready to accept" in the log (the file is appended to
# across restarts) or for the server's exit. The watcher is forked twice,
# so that it is not left a zombie child of the server.
out=/proc/\$\$/fd/1
if [ -f "\$out" ]; then
	n=\$(grep -c 'Ready to accept' "\$out")
	( (while kill -0 \$\$ 2>/dev/null &&
		[ "\$(grep -c 'Ready to accept' "\$out" 2>/dev/null)" = "\$n" ]; do sleep 0.01; done
	echo "tumbler PID: \$\$") & )
else
	echo "tumbler PID: \$\$"
fi
exec "$bin" "\$@" 2>&1
EOF
	chmod +x "$work/src/redis-server"
	ln -s "$(command -v redis-cli)" "$work/src/redis-cli"
	ln -s "$(command -v redis-benchmark)" "$work/src/redis-benchmark"
	for unit in "$@"; do
		log="$out/$(echo "$unit" | tr / _).log"
		# shellcheck disable=SC2086
		(cd "$work" && timeout 900 tclsh tests/test_helper.tcl --single "$unit" --baseport "$baseport" \
			--portcount 1000 "${tags[@]}" ${ARGS:-}) >"$log" 2>&1
		sed -i 's/\x1b\[[0-9;]*m//g' "$log"
		printf '%-24s ok %-4s err %-4s exceptions %s  %s\n' "$unit" "$(grep -c '^\[ok\]' "$log")" \
			"$(grep -c '^\[err\]' "$log")" "$(grep -c '^\[exception\]' "$log")" "$log"
	done
	exit 0
fi
for unit in "$@"; do
	log="$out/$(echo "$unit" | tr / _).log"
	if [ "$bin" = redis ]; then
		redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no "${debugargs[@]}" >/dev/null 2>&1 &
	else
		"$bin" --port "$port" --bind 127.0.0.1 "${debugargs[@]}" >"$out/server.log" 2>&1 &
	fi
	pid=$!
	for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
	(cd "$work" && timeout 600 tclsh tests/test_helper.tcl --host 127.0.0.1 --port "$port" \
		--durable --single "$unit" --baseport "$baseport" --portcount 1000 "${tags[@]}") >"$log" 2>&1
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	sed -i 's/\x1b\[[0-9;]*m//g' "$log"
	printf '%-24s ok %-4s err %-4s (unknown command %s) exceptions %s  %s\n' "$unit" \
		"$(grep -c '^\[ok\]' "$log")" "$(grep -c '^\[err\]' "$log")" \
		"$(grep -A2 '^\[err\]' "$log" | grep -c '^ERR unknown command\|^ERR unknown subcommand')" \
		"$(grep -c '^\[exception\]' "$log")" "$log"
done
