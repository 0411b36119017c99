package server

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// oom-score-adj and oom-score-adj-values: as Redis's setOOMScoreAdj, the
// process's /proc/self/oom_score_adj is set to the master's value (the
// first of oom-score-adj-values; tumbler is always a master), added to
// the score the process had before when oom-score-adj is yes (relative),
// as it is when absolute, and put back when oom-score-adj goes back to
// no. Linux only: elsewhere, and when the file cannot be read or written
// (lowering a score needs CAP_SYS_RESOURCE), CONFIG SET fails and a
// start logs a warning, as in Redis.

// oomScoreFile is the process's OOM score adjustment (a var for tests).
var oomScoreFile = "/proc/self/oom_score_adj"

// oomState is per process, as Redis's statics are: the servers of one
// process (RunN) share the score.
var oomState struct {
	sync.Mutex
	adjusted bool // set by us: base holds the score from before
	base     int
}

// errOOMScoreAdj is CONFIG SET's reason when the score cannot be set.
const errOOMScoreAdj = "Failed to set current oom_score_adj. Check server logs."

// setOOMScoreAdj applies c's oom-score-adj settings to the process.
func (s *Server) setOOMScoreAdj(c *Config) bool {
	mode := c.param("oom-score-adj", "no")
	oomState.Lock()
	defer oomState.Unlock()
	var val int
	switch {
	case mode != "no":
		if !oomState.adjusted {
			b, err := os.ReadFile(oomScoreFile)
			if err != nil {
				s.log.Warn("Unable to read oom_score_adj", "err", err)
				return false
			}
			oomState.base, _ = strconv.Atoi(strings.TrimSpace(string(b))) // atoi
			oomState.adjusted = true
		}
		first, _, _ := strings.Cut(c.param("oom-score-adj-values", "0 200 800"), " ")
		val, _ = strconv.Atoi(first)
		if mode != "absolute" {
			val += oomState.base
		}
		val = min(max(val, -1000), 1000)
	case oomState.adjusted:
		oomState.adjusted = false
		val = oomState.base
	default:
		return true
	}
	f, err := os.OpenFile(oomScoreFile, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(strconv.Itoa(val) + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		s.log.Warn("Unable to write oom_score_adj", "err", err)
		return false
	}
	return true
}
