package proc

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// StartRedis gives a server that answers, with its extra arguments
// applied, and one of its own per call.
func TestStartRedis_ExtraArgsAndOwnServer(t *testing.T) {
	a := StartRedis(t, "--maxclients", "77")
	b := StartRedis(t)
	if a == b {
		t.Fatalf("two StartRedis calls gave one address %s", a)
	}
	c, err := net.DialTimeout("tcp", a, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$10\r\nmaxclients\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	var last string
	for i := 0; i < 5; i++ {
		if last, err = r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	if last != "77\r\n" {
		t.Fatalf("CONFIG GET maxclients: last line %q, want 77", last)
	}
	if isOurs(a, "/nonexistent") {
		t.Fatal("isOurs accepts a server started with another dir")
	}
}
