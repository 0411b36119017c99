//go:build !linux

package engine

import "runtime"

// osName is INFO's os: the system and architecture.
func osName() string { return runtime.GOOS + " " + runtime.GOARCH }

func procRSS() uint64                                    { return 0 }
func systemMemory() uint64                               { return 0 }
func cpuTimes() (sys, user, childSys, childUser float64) { return 0, 0, 0, 0 }
