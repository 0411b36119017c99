package engine

import (
	"runtime/debug"
	"strings"
	"sync"
)

// BuildVersion is tumbler's own version, for INFO's tumbler_version and
// tumbler --version (redis_version is the Redis version tumbler speaks,
// Version): the main module's version as the go command stamped it
// (v1.2.3 for a tagged module, a pseudo-version for a commit), else
// "devel", with the commit it was built from when known ("devel
// 976a4301f2c8", "+dirty" for uncommitted changes).
var BuildVersion = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if strings.Contains(v, "-") && strings.Count(v, "-") >= 2 {
		return v // a pseudo-version names its commit already
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))] + dirty
	}
	return v
})
