package diff

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tumblerdb/tumbler/server"
)

// infoOmitted are the fields of Redis 7.0's INFO that tumbler leaves out,
// rather than show a figure it does not measure.
var infoOmitted = map[string]string{
	"atomicvar_api":              "built by Go: INFO has go_version",
	"gcc_version":                "built by Go: INFO has go_version",
	"used_memory_lua":            "Lua runs on the Go heap: its memory is not told apart",
	"used_memory_lua_human":      "Lua runs on the Go heap",
	"used_memory_vm_eval":        "Lua runs on the Go heap",
	"used_memory_vm_functions":   "Lua runs on the Go heap",
	"used_memory_vm_total":       "Lua runs on the Go heap",
	"used_memory_vm_total_human": "Lua runs on the Go heap",
	"reply_buffer_shrinks":       "no reply buffers resized as Redis's",
	"reply_buffer_expands":       "no reply buffers resized as Redis's",
	"used_cpu_sys_main_thread":   "no main thread: commands run on every core",
	"used_cpu_user_main_thread":  "no main thread: commands run on every core",
}

// infoExtra are tumbler's fields that Redis 7.0 does not have.
var infoExtra = map[string]bool{"go_version": true, "tumbler_version": true, "total_eval_calls": true}

// infoShapes classify INFO values: monitoring tools parse integers,
// two-decimal floats, percentages and human sizes differently.
var infoShapes = []struct {
	name string
	re   *regexp.Regexp
}{
	{"int", regexp.MustCompile(`^-?[0-9]+$`)},
	{"float2", regexp.MustCompile(`^-?[0-9]+\.[0-9]{2}$`)},
	{"float6", regexp.MustCompile(`^-?[0-9]+\.[0-9]{6}$`)},
	{"percent", regexp.MustCompile(`^[0-9]+\.[0-9]{2}%$`)},
	{"human", regexp.MustCompile(`^[0-9]+(\.[0-9]{2})?[BKMGTP]$`)},
}

func infoShape(v string) string {
	for _, s := range infoShapes {
		if s.re.MatchString(v) {
			return s.name
		}
	}
	return "string"
}

// infoShapeDiffers are fields whose values differ in kind for a reason.
var infoShapeDiffers = map[string]bool{
	"redis_build_id": true, // Redis's is a hex build hash, tumbler's 0
}

type infoField struct{ section, key, value string }

// infoLibrary is a function library of two functions, for INFO's
// number_of_functions and number_of_libraries.
const infoLibrary = "#!lua name=infolib\nredis.register_function('info_a', function() return 1 end)\nredis.register_function('info_b', function() return 2 end)"

func readInfo(t *testing.T, addr string) []infoField {
	t.Helper()
	c, err := dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	// the same small lock workload on both: keys with and without a TTL,
	// a lock script, a function library, an error reply
	for _, cmd := range [][]string{
		{"FLUSHALL"}, {"SET", "lock:a", "me", "PX", "60000", "NX"}, {"SET", "plain", "1"}, {"GET", "lock:a"},
		{"EVAL", "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('pexpire',KEYS[1],ARGV[2]) else return 0 end", "1", "lock:a", "me", "30000"},
		{"FUNCTION", "FLUSH"}, {"FUNCTION", "LOAD", infoLibrary},
		{"NOSUCHCOMMAND"},
	} {
		if _, err := c.do(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	reply, err := c.do("INFO", "ALL")
	if err != nil {
		t.Fatal(err)
	}
	body := string(reply)
	if i := strings.Index(body, "\r\n"); i >= 0 {
		body = body[i+2:] // the bulk or verbatim header
	}
	body = strings.TrimPrefix(body, "txt:")
	var fields []infoField
	section := ""
	for _, line := range strings.Split(body, "\r\n") {
		if name, ok := strings.CutPrefix(line, "# "); ok {
			section = name
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields = append(fields, infoField{section, k, v})
		}
	}
	return fields
}

// TestInfo_FieldsMatchRedis: INFO ALL has Redis 7.0's fields, in its
// sections and order, with values of the same kind (integer, two-decimal
// float, percentage, human size), except the fields listed above. The
// per-command sections (commandstats, errorstats, latencystats) are
// compared by the transcripts.
func TestInfo_FieldsMatchRedis(t *testing.T) {
	redis := readInfo(t, startRedis(t))
	tumbler := readInfo(t, server.RunT(t).Addr())
	for _, f := range redis {
		if f.key == "redis_version" && !strings.HasPrefix(f.value, "7.0.") {
			t.Skipf("redis-server is %s: INFO's fields are compared with Redis 7.0's", f.value)
		}
	}
	perCommand := map[string]bool{"Commandstats": true, "Errorstats": true, "Latencystats": true}
	got := map[string]infoField{}
	pos := map[string]int{}
	for i, f := range tumbler {
		got[f.key] = f
		pos[f.key] = i
		if !perCommand[f.section] && !infoExtra[f.key] && f.section != "Keyspace" {
			found := false
			for _, r := range redis {
				found = found || r.key == f.key
			}
			if !found {
				t.Errorf("tumbler's %s (%s) is not a Redis 7.0 field: add it to infoExtra if it is meant", f.key, f.section)
			}
		}
	}
	last, lastKey := -1, ""
	for _, r := range redis {
		if perCommand[r.section] {
			continue
		}
		if _, omitted := infoOmitted[r.key]; omitted {
			if _, ok := got[r.key]; ok {
				t.Errorf("%s is listed in infoOmitted but tumbler has it: remove the entry", r.key)
			}
			continue
		}
		f, ok := got[r.key]
		switch {
		case !ok:
			t.Errorf("INFO lacks %s (%s section; Redis: %q)", r.key, r.section, r.value)
			continue
		case f.section != r.section:
			t.Errorf("%s is in section %s, Redis has it in %s", r.key, f.section, r.section)
		case !infoShapeDiffers[r.key] && infoShape(f.value) != infoShape(r.value):
			t.Errorf("%s = %q (%s), Redis: %q (%s)", r.key, f.value, infoShape(f.value), r.value, infoShape(r.value))
		}
		if pos[r.key] < last {
			t.Errorf("%s comes before %s, Redis has it after", r.key, lastKey)
		}
		last, lastKey = pos[r.key], r.key
	}
	// the same functions, counted alike
	for _, key := range []string{"number_of_functions", "number_of_libraries"} {
		var want string
		for _, r := range redis {
			if r.key == key {
				want = r.value
			}
		}
		if got[key].value != want || want == "0" {
			t.Errorf("%s = %q, Redis: %q", key, got[key].value, want)
		}
	}
	// Redis's avg_ttl is an estimate its expiry cycle updates (0 until
	// then); tumbler's is the mean time left, at once.
	for name, re := range map[string]string{"redis": `^keys=2,expires=1,avg_ttl=[0-9]+$`, "tumbler": `^keys=2,expires=1,avg_ttl=[1-9][0-9]*$`} {
		fields := redis
		if name == "tumbler" {
			fields = tumbler
		}
		v := ""
		for _, f := range fields {
			if f.key == "db0" {
				v = f.value
			}
		}
		if !regexp.MustCompile(re).MatchString(v) {
			t.Errorf("%s: db0 = %q, want 2 keys, 1 with a TTL, and avg_ttl (%s)", name, v, re)
		}
	}
}

// memoryStatsShape lists a MEMORY STATS reply's field names, in order, each
// with the kind of its value (":" integer, "," double, "$" a double as a
// RESP2 bulk string, "%" or "*" a database's map); a database's fields are
// named db.N/field.
func memoryStatsShape(t *testing.T, raw []byte) []string {
	t.Helper()
	var out []string
	var walk func(prefix string, raw []byte)
	walk = func(prefix string, raw []byte) {
		_, elems, ok := Elements(raw)
		if !ok || len(elems)%2 != 0 {
			t.Fatalf("MEMORY STATS: not a map of names and values: %q", raw)
		}
		for i := 0; i < len(elems); i += 2 {
			_, name, _ := strings.Cut(strings.TrimSuffix(string(elems[i]), "\r\n"), "\r\n")
			v := elems[i+1]
			out = append(out, prefix+name+" "+string(v[0]))
			if v[0] == '*' || v[0] == '%' {
				walk(prefix+name+"/", v)
			}
		}
	}
	walk("", raw)
	return out
}

// TestMemoryStats_FieldsMatchRedis: MEMORY STATS has Redis 7.0's fields,
// in its order, a map for each database with keys, and values of the same
// kinds, in RESP2 and RESP3.
func TestMemoryStats_FieldsMatchRedis(t *testing.T) {
	redis, tumbler := dialBoth(t)
	for _, proto := range []string{"2", "3"} {
		var shapes [2][]string
		for i, c := range []*conn{redis, tumbler} {
			for _, cmd := range [][]string{{"HELLO", proto}, {"FLUSHALL"}, {"SET", "lock:a", "me", "PX", "60000"}, {"SET", "plain", "1"},
				{"SELECT", "2"}, {"SET", "other", "1"}, {"SELECT", "0"}} {
				if _, err := c.do(cmd...); err != nil {
					t.Fatal(err)
				}
			}
			raw, err := c.do("MEMORY", "STATS")
			if err != nil {
				t.Fatal(err)
			}
			shapes[i] = memoryStatsShape(t, raw)
		}
		if got, want := strings.Join(shapes[1], "\n"), strings.Join(shapes[0], "\n"); got != want {
			t.Errorf("RESP%s: MEMORY STATS fields\n%s\nRedis:\n%s", proto, got, want)
		}
	}
}
