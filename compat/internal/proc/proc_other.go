//go:build !linux

package proc

import "os/exec"

// DieWithParent does nothing here: only Linux has PR_SET_PDEATHSIG.
func DieWithParent(*exec.Cmd) {}
