// Package compat proves tumbler's compatibility: real client libraries,
// unmodified, run against tumbler, and command transcripts are diffed
// against a real redis-server. It is its own module so that client
// libraries never enter tumbler's main module.
package compat
