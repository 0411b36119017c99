package diff

import (
	"testing"

	"github.com/tumblerdb/tumbler/server"
)

// Clients blocked on a key wait on it in their own database: a push under
// the same name in another database leaves them waiting; a push in theirs,
// a MOVE into it, a SWAPDB that brings the key, or a script that SELECTs it
// serves them. Servers of its own: SWAPDB reaches every connection, and
// each case keeps to databases no other case uses.
func TestWire_BlockingAcrossDatabases(t *testing.T) {
	redis := startRedisWith(t, "127.0.0.1")
	tumbler := server.RunT(t).Addr()
	wireDiff(t, redis, tumbler, []wireCase{
		{"a push in another database does not serve", []wireStep{
			s("SELECT 2\r\nBLPOP bq1 0\r\n"),
			{conn: 1, send: "RPUSH bq1 x\r\n"},
			{},
			{conn: 1, send: "SELECT 2\r\nRPUSH bq1 y\r\n"},
			{},
			{conn: 1, send: "LLEN bq1\r\nSELECT 0\r\nLLEN bq1\r\n"},
		}, "*2\r\n$3\r\nbq1\r\n$1\r\ny\r\n"},
		{"SWAPDB brings the key", []wireStep{
			s("SELECT 10\r\nBLPOP bq2 0\r\n"),
			{conn: 1, send: "SELECT 11\r\nRPUSH bq2 a b\r\n"},
			{},
			{conn: 1, send: "SWAPDB 10 11\r\n"},
			{},
			{conn: 1, send: "LRANGE bq2 0 -1\r\nSELECT 10\r\nLRANGE bq2 0 -1\r\n"},
		}, "*2\r\n$3\r\nbq2\r\n$1\r\na\r\n"},
		{"MOVE brings the key", []wireStep{
			s("SELECT 5\r\nBZPOPMIN bz 0\r\n"),
			{conn: 1, send: "ZADD bz 1 m\r\n"},
			{},
			{conn: 1, send: "MOVE bz 5\r\n"},
			{},
			{conn: 1, send: "EXISTS bz\r\n"},
		}, "$2\r\nbz\r\n$1\r\nm\r\n"},
		{"a script's SELECT pushes in the waiter's database", []wireStep{
			s("SELECT 7\r\nBLMOVE bsrc bdst LEFT RIGHT 0\r\n"),
			{conn: 1, send: "EVAL \"redis.call('rpush', 'bsrc', 'zero') redis.call('select', 7) return redis.call('rpush', 'bsrc', 'seven')\" 0\r\n"},
			{},
			{conn: 1, send: "LRANGE bsrc 0 -1\r\nSELECT 7\r\nLRANGE bdst 0 -1\r\nLRANGE bsrc 0 -1\r\n"},
		}, "$5\r\nseven\r\n"},
		{"a transaction's SELECT pushes in the waiter's database", []wireStep{
			s("SELECT 8\r\nBRPOP bq3 0\r\n"),
			{conn: 1, send: "MULTI\r\nRPUSH bq3 zero\r\nSELECT 8\r\nRPUSH bq3 eight\r\nEXEC\r\n"},
			{},
			{conn: 1, send: "LLEN bq3\r\nSELECT 0\r\nLLEN bq3\r\n"},
		}, "$5\r\neight\r\n"},
	})
}
