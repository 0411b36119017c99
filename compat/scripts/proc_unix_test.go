//go:build unix

package scripts

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd in its own process group and makes a context
// cancel kill the whole group: `node --test` runs each test file in a child
// process that would otherwise outlive a killed parent.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
