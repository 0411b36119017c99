package main

import (
	"log/slog"
	"net"
	"os"
)

// Supervision (the supervised directive), as redis-server does it: under
// systemd (Type=notify units, such as Debian's redis-server.service) the
// service manager learns through $NOTIFY_SOCKET that the server is ready
// (READY=1) and when it is stopping (STOPPING=1); under upstart
// ("expect stop") the process stops itself with SIGSTOP once ready. auto
// picks upstart when $UPSTART_JOB is set, else systemd when $NOTIFY_SOCKET
// is.

// supervisor is the supervision in force: "", "upstart" or "systemd".
type supervisor string

// supervisedByEnv reports whether the configured mode finds its
// supervisor's variable in the environment: a server so supervised does
// not daemonize (redis-server's background = daemonize && !supervised).
func supervisedByEnv(mode string) bool {
	upstart, systemd := os.Getenv("UPSTART_JOB") != "", os.Getenv("NOTIFY_SOCKET") != ""
	switch mode {
	case "auto":
		return upstart || systemd
	case "upstart":
		return upstart
	case "systemd":
		return systemd
	}
	return false
}

// resolveSupervisor turns the configured mode into the one in force.
func resolveSupervisor(mode string, log *slog.Logger) supervisor {
	if mode == "auto" {
		switch {
		case os.Getenv("UPSTART_JOB") != "":
			log.Debug("Upstart supervision detected.")
			mode = "upstart"
		case os.Getenv("NOTIFY_SOCKET") != "":
			log.Debug("Systemd supervision detected.")
			mode = "systemd"
		}
	}
	switch mode {
	case "upstart":
		if os.Getenv("UPSTART_JOB") == "" {
			log.Warn("upstart supervision requested, but UPSTART_JOB not found!")
			return ""
		}
		return "upstart"
	case "systemd":
		if !sdNotify("STATUS=tumbler is starting...\n", log) {
			return ""
		}
		log.Info("Supervised by systemd. Please make sure you set appropriate values for TimeoutStartSec and TimeoutStopSec in your service unit.")
		return "systemd"
	}
	return ""
}

// ready tells the supervisor the server accepts connections.
func (s supervisor) ready(log *slog.Logger) {
	switch s {
	case "systemd":
		sdNotify("STATUS=Ready to accept connections\n", log)
		sdNotify("READY=1\n", log)
	case "upstart":
		log.Info("supervised by upstart, will stop to signal readiness.")
		stopSelf()
		os.Unsetenv("UPSTART_JOB")
	}
}

// stopping tells the supervisor the server is shutting down.
func (s supervisor) stopping(log *slog.Logger) {
	if s == "systemd" {
		sdNotify("STOPPING=1\n", log)
	}
}

// sdNotify sends state to the service manager's notification socket
// (sd_notify(3)); a name starting with '@' is an abstract socket, which
// Go's net package maps. It reports whether the message was sent.
func sdNotify(state string, log *slog.Logger) bool {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		log.Warn("systemd supervision error: NOTIFY_SOCKET not found!")
		return false
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err == nil {
		_, err = c.Write([]byte(state))
		c.Close()
	}
	if err != nil {
		log.Warn("systemd supervision error: sd_notify: " + err.Error())
		return false
	}
	return true
}
