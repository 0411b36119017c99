// Package proc starts the compat tests' helper processes (redis-server,
// client runtimes) so that they end with the test binary that started
// them: a test binary that crashes, or is killed by go test's -timeout,
// never runs its t.Cleanup, and a redis-server left behind holds its port
// and its memory until the machine goes down.
package proc
