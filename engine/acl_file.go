package engine

import (
	"fmt"
	"strings"
)

// LoadFile installs the users of an ACL file's text (ACL LOAD, start-up
// with aclfile), as Redis's ACLLoadFromFile: lines "user <name> rules...",
// words split on single spaces; every error of every line is reported
// and then nothing changes. A file without "default" gives the default
// user Redis's start-up rules. It returns the users replaced (their
// clients must be disconnected) or the errors text.
func (a *ACL) LoadFile(filename, text string) ([]*ACLUser, string) {
	var errs strings.Builder
	var names []string
	var built []*aclRules
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Split(line, " ")
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", filename, n)
			continue
		}
		if hasSpace(argv[1]) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", filename, n, argv[1])
			continue
		}
		if seen[argv[1]] {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", argv[1], n)
			continue
		}
		seen[argv[1]] = true
		r := a.newRules()
		merged, _ := MergeSelectorArgs(argv[2:])
		if merged == nil {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", filename, n)
		}
		syntax := false
		for _, op := range merged {
			op = strings.Trim(op, "\t\r\n")
			if err := a.applyUserOp(r, op); err != "" {
				if err == aclErrUnknown {
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", filename, n, op, err)
				} else if !syntax {
					fmt.Fprintf(&errs, "%s:%d: %s. ", filename, n, err)
					syntax = true
				}
			}
		}
		names = append(names, argv[1])
		built = append(built, r)
	}
	if errs.Len() > 0 {
		return nil, errs.String() + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	}
	return a.install(names, built, a.defaultRules()), ""
}

// install replaces every user but default with names[i] (rules built[i]);
// default gets the listed rules, or def. It returns the users replaced.
func (a *ACL) install(names []string, built []*aclRules, def *aclRules) []*ACLUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	var gone []*ACLUser
	for name, u := range a.users {
		if name != "default" {
			gone = append(gone, u)
			delete(a.users, name)
			u.rules.Store(denyAll)
		}
	}
	for i, name := range names {
		if name == "default" {
			def = built[i]
			continue
		}
		u := &ACLUser{Name: name, acl: a}
		a.store(u, built[i])
		a.users[name] = u
	}
	a.store(a.def, def)
	return gone
}

// FileText is the users as ACL SAVE writes them: one ACL LIST line each.
func (a *ACL) FileText() string {
	var b strings.Builder
	for _, u := range a.Users() {
		b.WriteString("user " + u.Name + " " + u.Snapshot().Rules + "\n")
	}
	return b.String()
}
