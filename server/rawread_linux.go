package server

// rawReadSupported: the raw read loop needs edge-triggered readiness
// (Go's poller uses epoll with EPOLLET on Linux).
const rawReadSupported = true
