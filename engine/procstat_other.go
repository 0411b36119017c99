//go:build !linux

package engine

func procRSS() uint64                                    { return 0 }
func systemMemory() uint64                               { return 0 }
func cpuTimes() (sys, user, childSys, childUser float64) { return 0, 0, 0, 0 }
