package diff

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tumblerdb/tumbler/compat/internal/proc"
	"github.com/tumblerdb/tumbler/server"
)

// TestClientListInputFields compares CLIENT LIST's and CLIENT INFO's
// qbuf, argv-mem, multi-mem and multi with redis-server's. The asking
// client's qbuf counts the requests of its batch and what was read after
// them (Redis's query buffer keeps them until the batch has run, so a lone
// "CLIENT LIST" shows qbuf=26, as Redis's introspection test expects), its
// argv-mem the arguments of the command running (EXEC's inside a
// transaction), and multi-mem the queued commands' arguments and their
// pointers. Other clients, between commands, show no query buffer and no
// arguments (a blocked one its command's), and their queued commands; in
// the middle of a request, what Redis would not have parsed yet as qbuf
// and the complete arguments as argv-mem.
// qbuf-free and tot-mem depend on buffer sizes, which differ.
func TestClientListInputFields(t *testing.T) {
	redis := proc.StartRedis(t)
	tumbler := server.RunT(t).Addr()
	const info = "*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n"
	cases := []wireCase{
		{"alone", []wireStep{s(info)}, "qbuf=26 "},
		{"list alone", []wireStep{s("*2\r\n$6\r\nclient\r\n$4\r\nlist\r\n")}, "qbuf=26 "},
		{"inline, a command after", []wireStep{s("CLIENT INFO\r\nPING\r\n")}, "qbuf=19 "},
		{"a partial request after", []wireStep{s(info + "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET")}, "qbuf=51 "},
		{"in a transaction", []wireStep{s("MULTI\r\nSET a bb\r\nCLIENT INFO\r\nEXEC\r\n")}, "multi-mem=56 "},
		{"a long argument", []wireStep{s("CLIENT INFO\r\nECHO " + strings.Repeat("x", 3000) + "\r\n")}, "qbuf=3020 "},
		{"others between commands", []wireStep{
			{conn: 1, send: "CLIENT SETNAME idle\r\n"},
			{conn: 2, send: "CLIENT SETNAME queued\r\nMULTI\r\nSET k v\r\nGET k\r\n"},
			s("CLIENT SETNAME me\r\nCLIENT LIST\r\n"),
		}, "multi-mem=49 "},
		{"another client mid-request", []wireStep{
			{conn: 1, send: "CLIENT SETNAME part\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nab"},
			s("CLIENT LIST\r\n"),
		}, "argv-mem=4 "},
		{"another client mid-way through a large argument", []wireStep{
			{conn: 1, send: "CLIENT SETNAME big\r\n*2\r\n$3\r\nGET\r\n$40000\r\n" + strings.Repeat("x", 10000)},
			s("CLIENT LIST\r\n"),
		}, "qbuf=10000 "},
		{"a blocked client", []wireStep{
			{conn: 1, send: "CLIENT SETNAME blocked\r\nBLPOP nosuchlist 0\r\n"},
			s("CLIENT LIST\r\n"),
		}, "argv-mem=16 "},
	}
	field := regexp.MustCompile(` (name|multi|qbuf|argv-mem|multi-mem)=(\S*)`)
	fields := func(data []byte) string {
		var b strings.Builder
		for _, line := range strings.Split(string(data), "\n") {
			for _, f := range field.FindAllString(line, -1) {
				b.WriteString(f)
			}
			if strings.Contains(line, "id=") {
				b.WriteString(" |")
			}
		}
		return b.String()
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := runWire(redis, tc)
			if err != nil {
				t.Fatal(err)
			}
			g, err := runWire(tumbler, tc)
			if err != nil {
				t.Fatal(err)
			}
			want, got := fields(r[len(r)-1].data), fields(g[len(g)-1].data)
			if !strings.Contains(want+" ", " "+tc.oracle) {
				t.Fatalf("redis's reply lacks %q: %s", tc.oracle, want)
			}
			if want != got {
				t.Errorf("\n redis:   %s\n tumbler: %s", want, got)
			}
		})
	}
}
