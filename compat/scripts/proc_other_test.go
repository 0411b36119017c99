//go:build !unix

package scripts

import "os/exec"

// setProcessGroup: elsewhere, exec.CommandContext's default (kill the
// process) and WaitDelay are all there is.
func setProcessGroup(cmd *exec.Cmd) {}
