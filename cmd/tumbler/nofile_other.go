//go:build !unix

package main

import "github.com/tumblerdb/tumbler/server"

// fitOpenFiles: there is no RLIMIT_NOFILE to fit here.
func fitOpenFiles(*server.Config) (notices, warnings []string, err error) { return nil, nil, nil }

// adjustOpenFiles: nor at CONFIG SET maxclients; every maxclients fits.
func adjustOpenFiles(maxClients int) (fit int, notices, warnings []string, err error) {
	return maxClients, nil, nil, nil
}
