package goclients

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tumblerdb/tumbler/internal/testpki"
	"github.com/tumblerdb/tumbler/server"
)

// TestTLS_GoRedis: go-redis over TLS with a client certificate, on RESP3
// and RESP2, authenticating as a named user; the plain port serves too.
func TestTLS_GoRedis(t *testing.T) {
	pki := testpki.New(t)
	pool, serverCert, clientCert := pki.Pool, pki.Server, pki.Client
	srv := server.RunT(t, server.WithConfig(func(c *server.Config) {
		c.TLSAddr = "127.0.0.1:0"
		c.TLSConfig = &tls.Config{
			Certificates: []tls.Certificate{serverCert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
		}
		c.Users = []server.User{{Name: "locker", Passwords: []string{"lpw"}}}
		c.RequirePass = "dpw"
	}))
	ctx := testCtx(t, 20*time.Second)
	clientTLS := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}

	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: srv.TLSAddr(), Protocol: p.proto, TLSConfig: clientTLS, Username: "locker", Password: "lpw"})
			defer rdb.Close()
			if ok, err := rdb.SetNX(ctx, "tls-lock", "me", 10*time.Second).Result(); err != nil || !ok {
				t.Fatalf("SetNX over TLS = %v, %v", ok, err)
			}
			if who, err := rdb.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != "locker" {
				t.Fatalf("ACL WHOAMI = %q, %v", who, err)
			}
			if info, err := rdb.ClientInfo(ctx).Result(); err != nil || info.Resp != p.want {
				t.Fatalf("CLIENT INFO = %+v, %v", info, err)
			}
			plain := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: p.proto, Password: "dpw"})
			defer plain.Close()
			if v, err := plain.Get(ctx, "tls-lock").Result(); err != nil || v != "me" {
				t.Fatalf("GET on the plain port = %q, %v", v, err)
			}
			if err := plain.Del(ctx, "tls-lock").Err(); err != nil {
				t.Fatal(err)
			}

			wrong := redis.NewClient(&redis.Options{Addr: srv.TLSAddr(), Protocol: p.proto, TLSConfig: clientTLS, Username: "locker", Password: "nope", MaxRetries: -1})
			defer wrong.Close()
			if err := wrong.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				t.Fatalf("wrong password over TLS: %v", err)
			}
			noCert := redis.NewClient(&redis.Options{Addr: srv.TLSAddr(), Protocol: p.proto, TLSConfig: &tls.Config{RootCAs: pool}, Password: "dpw", MaxRetries: -1})
			defer noCert.Close()
			if err := noCert.Ping(ctx).Err(); err == nil {
				t.Fatal("a client without a certificate was served")
			}
		})
	}
}
