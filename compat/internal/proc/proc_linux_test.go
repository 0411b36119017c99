package proc

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDieWithParent runs this test binary again as a parent that starts a
// long sleep with DieWithParent and then exits at once, cleaning nothing
// up, as a crashed test binary would; the sleep must end with it.
func TestDieWithParent(t *testing.T) {
	if os.Getenv("PROC_TEST_PARENT") == "1" {
		child := exec.Command("sleep", "60")
		DieWithParent(child)
		if err := child.Start(); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(child.Process.Pid) + "\n")
		os.Exit(0) // no Wait, no Kill
	}
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep(1)")
	}
	parent := exec.Command(os.Args[0], "-test.run", "^TestDieWithParent$")
	parent.Env = append(os.Environ(), "PROC_TEST_PARENT=1")
	out, err := parent.Output()
	if err != nil {
		t.Fatalf("parent: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("parent printed %q", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d outlived the process that started it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs: it exists and is not a zombie waiting
// to be reaped (by whatever adopted it).
func alive(pid int) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(line, ')')
	if i < 0 || i+2 >= len(line) {
		return false
	}
	return line[i+2] != 'Z' && line[i+2] != 'X'
}
