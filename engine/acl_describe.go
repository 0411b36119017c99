package engine

import (
	"strings"
	"time"
)

// Describing users as ACL LIST, ACL GETUSER and the ACL file show them
// (ACLDescribeUser, ACLDescribeSelectorCommandRules in src/acl.c).

// SelectorDesc is one selector as ACL GETUSER shows it.
type SelectorDesc struct {
	Commands, Keys, Channels string
}

// UserDesc is a user as ACL GETUSER and ACL LIST show it.
type UserDesc struct {
	Flags     []string
	Passwords []string
	Selectors []SelectorDesc // [0] is the root selector
	Rules     string         // the ACL LIST form, without "user <name> "
}

// Snapshot describes the user's current rules.
func (u *ACLUser) Snapshot() UserDesc {
	r := u.rules.Load()
	e := u.acl.e
	var d UserDesc
	if r.on {
		d.Flags = append(d.Flags, "on")
	} else {
		d.Flags = append(d.Flags, "off")
	}
	if r.nopass {
		d.Flags = append(d.Flags, "nopass")
	}
	switch r.sanitize {
	case skipSanitizePayload:
		d.Flags = append(d.Flags, "skip-sanitize-payload")
	case sanitizePayload:
		d.Flags = append(d.Flags, "sanitize-payload")
	}
	d.Passwords = append([]string(nil), r.passwords...)
	var b strings.Builder
	for _, f := range d.Flags {
		b.WriteString(f + " ")
	}
	for _, p := range r.passwords {
		b.WriteString("#" + p + " ")
	}
	for i, s := range r.sels {
		cmds := e.describeCommands(s)
		sd := SelectorDesc{Commands: cmds}
		var keys, chans []string
		if s.allKeys {
			sd.Keys = "~*"
		} else {
			for _, k := range s.keys {
				keys = append(keys, k.String())
			}
			sd.Keys = strings.Join(keys, " ")
		}
		if s.allChannels {
			sd.Channels = "&*"
		} else {
			for _, ch := range s.channels {
				chans = append(chans, "&"+ch)
			}
			sd.Channels = strings.Join(chans, " ")
		}
		d.Selectors = append(d.Selectors, sd)
		var sb strings.Builder
		if s.allKeys {
			sb.WriteString("~* ")
		} else {
			for _, k := range keys {
				sb.WriteString(k + " ")
			}
		}
		if s.allChannels {
			sb.WriteString("&* ")
		} else {
			sb.WriteString("resetchannels ")
			for _, ch := range chans {
				sb.WriteString(ch + " ")
			}
		}
		sb.WriteString(cmds)
		if i == 0 {
			b.WriteString(sb.String())
		} else {
			b.WriteString(" (" + sb.String() + ")")
		}
	}
	d.Rules = b.String()
	return d
}

// describeCommands is ACLDescribeSelectorCommandRules: the shortest
// rules it finds that give exactly the selector's command bits, starting
// from +@all when the selector was given +@all (later commands allowed)
// and from -@all otherwise, then the best-fitting categories, then single
// commands and first arguments.
func (e *Engine) describeCommands(s *aclSelector) string {
	var rules []string
	additive := !s.bit(aclFutureBit)
	fake := &aclSelector{}
	if additive {
		rules = append(rules, "-@all")
	} else {
		rules = append(rules, "+@all")
		for i := range fake.cmds {
			fake.cmds[i] = ^uint64(0)
		}
	}
	temp := &aclSelector{cmds: s.cmds}
	var applied [len(aclCategoryNames)]bool
	for {
		best, mindiff, maxsame := -1, int(^uint(0)>>1), 0
		for j := range aclCategoryNames {
			if applied[j] {
				continue
			}
			on, off := 0, 0
			e.eachACLCommand(func(cmd *Command) {
				if cmd.aclCats&(1<<j) != 0 {
					if temp.bit(cmd.aclID) {
						on++
					} else {
						off++
					}
				}
			})
			diff, same := off, on
			if !additive {
				diff, same = on, off
			}
			if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
				best, mindiff, maxsame = j, diff, same
			}
		}
		if best == -1 {
			break
		}
		sign := "+@"
		if !additive {
			sign = "-@"
		}
		rules = append(rules, sign+aclCategoryNames[best])
		e.setCategory(fake, 1<<best, additive)
		e.setCategory(temp, 1<<best, !additive)
		applied[best] = true
	}
	for _, cmd := range e.aclCommands() {
		rules = e.describeSingle(s, fake, cmd, rules)
	}
	return strings.Join(rules, " ")
}

// describeSingle adds the rules that make fake's bit for cmd (and its
// subcommands) the selector's, and its allowed first arguments.
func (e *Engine) describeSingle(s, fake *aclSelector, cmd *Command, rules []string) []string {
	user := s.bit(cmd.aclID)
	if user != fake.bit(cmd.aclID) {
		if user {
			rules = append(rules, "+"+cmd.Name)
		} else {
			rules = append(rules, "-"+cmd.Name)
		}
		fake.changePerm(cmd, user)
	}
	for _, sub := range sortedSubs(cmd) {
		rules = e.describeSingle(s, fake, sub, rules)
	}
	if !user {
		for _, a := range s.firstArgs[cmd.aclID] {
			rules = append(rules, "+"+cmd.Name+"|"+a)
		}
	}
	return rules
}

// ACLCategories returns the category names in Redis's order (ACL CAT).
func ACLCategories() []string { return append([]string(nil), aclCategoryNames[:]...) }

// CommandsInCategory returns the names of the commands (subcommands as
// "container|sub") in a category (ACL CAT category); false when there is
// no such category.
func (e *Engine) CommandsInCategory(name string) ([]string, bool) {
	cat := aclCategoryByName(name)
	if cat == 0 {
		return nil, false
	}
	var out []string
	e.eachACLCommand(func(cmd *Command) {
		if cmd.aclCats&cat != 0 {
			out = append(out, cmd.Name)
		}
	})
	return out, true
}

// WallMillis is the wall clock in Unix ms.
func WallMillis() int64 { return time.Now().UnixMilli() }
