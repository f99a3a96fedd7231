package harness

import (
	"os/exec"
	"syscall"
	"time"
)

// ProcessGroup makes a child the leader of its own process group, so that
// KillGroup also stops the workers it forks (the Python conductor forks).
// The child is also killed when the test process dies without cleaning up
// (a test timeout panics past every t.Cleanup), so that it cannot serve a
// later test's broker or database.
func ProcessGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// KillGroup sends SIGTERM to cmd's process group, then SIGKILL after 10 s.
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-done
	}
}
