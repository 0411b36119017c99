package scripts

import (
	"testing"

	"github.com/tumblerdb/tumbler/server"
)

// The RESP3-by-default clients: ioredis 6 and node-redis 6 (npm aliases
// ioredis6 and redis6 in compat/node/package.json) send HELLO 3 first, and
// node-redis 6 has no RESP2 fallback.

func TestNodeIoredis6(t *testing.T) {
	node, dir := nodeSetup(t)
	srv := server.RunT(t)
	out := run(t, nodeTimeout, dir,
		[]string{"TUMBLER_ADDR=" + srv.Addr()},
		node, "--test", "ioredis6.test.js")
	nodeSummary(t, out, 6)
}

func TestNodeRedis6(t *testing.T) {
	node, dir := nodeSetup(t)
	srv := server.RunT(t)
	out := run(t, nodeTimeout, dir,
		[]string{"TUMBLER_ADDR=" + srv.Addr()},
		node, "--test", "noderedis6.test.js")
	nodeSummary(t, out, 6)
}
