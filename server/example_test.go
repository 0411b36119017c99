package server_test

import (
	"bufio"
	"fmt"
	"net"

	"github.com/tumblerdb/tumbler/server"
)

// Start a tumbler on a free loopback port, take a lock and release it.
func Example() {
	srv := server.New(server.Config{Addr: "127.0.0.1:0"})
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	rd := bufio.NewReader(conn)
	send := func(cmd string) string {
		fmt.Fprintf(conn, "%s\r\n", cmd) // inline commands, as redis-cli can send them
		line, _ := rd.ReadString('\n')
		return line[:len(line)-2]
	}
	fmt.Println(send("SET lock:orders tok1 PX 30000 NX"))
	fmt.Println(send("SET lock:orders tok2 PX 30000 NX"))
	fmt.Println(send(`EVAL "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end" 1 lock:orders tok1`))
	// Output:
	// +OK
	// $-1
	// :1
}
