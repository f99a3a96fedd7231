package apitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// A proc is a child process (a controller manager) in its own process
// group, with its output in a log file.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed once cmd has been waited for
}

// spawner starts child processes from one OS thread that stays alive until
// they are stopped: Pdeathsig fires when the thread that started a child
// exits, and Go may end an idle thread; a thread locked to a goroutine that
// never returns lives as long as the process. If the test binary dies, the
// kernel sends every child SIGKILL.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, after close(done)
		for {
			select {
			case r := <-s.reqs:
				r.err <- r.cmd.Start()
			case <-s.done:
				return
			}
		}
	}()
	return s
}

// start starts cmd from the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Its own process group (a signal to the group reaches nothing else),
	// killed with the test binary.
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	s.reqs <- r
	return <-r.err
}

// close ends the spawner's thread; call it once every child has exited.
func (s *spawner) close() { close(s.done) }

// startProc starts bin with args and env (added to this process's), its
// stdout and stderr going to logPath.
func (s *spawner) startProc(name, bin, logPath string, args, env []string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := s.start(cmd); err != nil {
		return nil, fmt.Errorf("apitest: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stop sends SIGTERM to the process group, and SIGKILL if it has not
// exited within grace.
func (p *proc) stop(grace time.Duration) {
	pgid := p.cmd.Process.Pid // Setpgid: the group id is the pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
}

// tail is the end of the process's log, for error messages.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitReady returns nil once check succeeds (polled every 100 ms), and an
// error with the end of the process's log if it exits or ctx ends first.
func (p *proc) waitReady(ctx context.Context, check func(context.Context) error) error {
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("apitest: %s exited (%s) before it was ready; its log ends with:\n%s", p.name, p.cmd.ProcessState, p.tail(4000))
		case <-ctx.Done():
			return fmt.Errorf("apitest: %s not ready: %w (last check: %v); its log ends with:\n%s", p.name, ctx.Err(), last, p.tail(4000)) //nolint:errorlint // only the context's error is the cause callers test; the last error is there for the reader
		case <-time.After(100 * time.Millisecond):
		}
	}
}
