//go:build unix && !linux

package server

const rawReadSupported = false
