package proc

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes cmd's process receive SIGKILL when the test binary
// ends, however it ends (PR_SET_PDEATHSIG). Call it before cmd.Start.
//
// The signal comes when the thread that started the process ends, not
// the process; Go ends a thread only with a goroutine locked to it, which
// the tests do not do.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
