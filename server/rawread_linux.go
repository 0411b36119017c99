package server

// rawReadSupported: raw reads and writes are used on Linux, where they are
// tested; other systems keep net.Conn's calls.
const rawReadSupported = true
