package engine

// Keyspace notifications (Redis's notify.c): with notify-keyspace-events
// set, a command that changes a key publishes the event on
// __keyspace@<db>__:<key> (flag K) and the key on __keyevent@<db>__:<event>
// (flag E), for the classes of events enabled. Events are published with
// the keyspace lock held, while the command runs, through the Publisher
// (as PUBLISH from a script is). With no class enabled (the default) a
// notify is one atomic load.

// Notification classes and channels, Redis's NOTIFY_* bits.
const (
	NotifyKeyspace = 1 << 0  // K
	NotifyKeyevent = 1 << 1  // E
	NotifyGeneric  = 1 << 2  // g
	NotifyString   = 1 << 3  // $
	NotifyList     = 1 << 4  // l
	NotifySet      = 1 << 5  // s
	NotifyHash     = 1 << 6  // h
	NotifyZset     = 1 << 7  // z
	NotifyExpired  = 1 << 8  // x
	NotifyEvicted  = 1 << 9  // e
	NotifyStream   = 1 << 10 // t
	NotifyKeyMiss  = 1 << 11 // m (not in A)
	NotifyModule   = 1 << 13 // d
	NotifyNew      = 1 << 14 // n (not in A)
	NotifyAll      = NotifyGeneric | NotifyString | NotifyList | NotifySet | NotifyHash | NotifyZset | NotifyExpired | NotifyEvicted | NotifyStream | NotifyModule
)

// ParseKeyspaceEvents is keyspaceEventsStringToFlags: ok is false for a
// character that names no class.
func ParseKeyspaceEvents(s string) (flags uint32, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			flags |= NotifyAll
		case 'g':
			flags |= NotifyGeneric
		case '$':
			flags |= NotifyString
		case 'l':
			flags |= NotifyList
		case 's':
			flags |= NotifySet
		case 'h':
			flags |= NotifyHash
		case 'z':
			flags |= NotifyZset
		case 'x':
			flags |= NotifyExpired
		case 'e':
			flags |= NotifyEvicted
		case 'K':
			flags |= NotifyKeyspace
		case 'E':
			flags |= NotifyKeyevent
		case 't':
			flags |= NotifyStream
		case 'm':
			flags |= NotifyKeyMiss
		case 'd':
			flags |= NotifyModule
		case 'n':
			flags |= NotifyNew
		default:
			return 0, false
		}
	}
	return flags, true
}

// FormatKeyspaceEvents is keyspaceEventsFlagsToString.
func FormatKeyspaceEvents(flags uint32) string {
	var b []byte
	if flags&NotifyAll == NotifyAll {
		b = append(b, 'A')
	} else {
		for _, c := range []struct {
			f uint32
			c byte
		}{{NotifyGeneric, 'g'}, {NotifyString, '$'}, {NotifyList, 'l'}, {NotifySet, 's'}, {NotifyHash, 'h'},
			{NotifyZset, 'z'}, {NotifyExpired, 'x'}, {NotifyEvicted, 'e'}, {NotifyStream, 't'}, {NotifyModule, 'd'}, {NotifyNew, 'n'}} {
			if flags&c.f != 0 {
				b = append(b, c.c)
			}
		}
	}
	if flags&NotifyKeyspace != 0 {
		b = append(b, 'K')
	}
	if flags&NotifyKeyevent != 0 {
		b = append(b, 'E')
	}
	if flags&NotifyKeyMiss != 0 {
		b = append(b, 'm')
	}
	return string(b)
}

// SetNotifyKeyspaceEvents sets the enabled classes and channels.
func (e *Engine) SetNotifyKeyspaceEvents(flags uint32) { e.notifyFlags.Store(flags) }

// NotifyKeyspaceEvents returns the enabled classes and channels.
func (e *Engine) NotifyKeyspaceEvents() uint32 { return e.notifyFlags.Load() }

// notify publishes event for key if its class is enabled
// (notifyKeyspaceEvent). Requires e.mu.
func (e *Engine) notify(class uint32, event string, key string) {
	flags := e.notifyFlags.Load()
	if flags&class == 0 {
		return
	}
	e.publishEvent(flags, event, key)
}

// notifyBytes is notify for a key held as bytes, converted only when the
// event is published (a conversion at every call would allocate for keys
// past 32 bytes on the lock path).
func (e *Engine) notifyBytes(class uint32, event string, key []byte) {
	if flags := e.notifyFlags.Load(); flags&class != 0 {
		e.publishEvent(flags, event, string(key))
	}
}

func (e *Engine) publishEvent(flags uint32, event, key string) {
	p := e.publisher
	if p == nil {
		return
	}
	if flags&NotifyKeyspace != 0 {
		p.Publish(e.runner, []byte(e.keyspacePrefix()+key), []byte(event), false)
	}
	if flags&NotifyKeyevent != 0 {
		p.Publish(e.runner, []byte(e.keyeventPrefix()+event), []byte(key), false)
	}
}
