package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/harness"
)

// TestLogFileAndSIGHUP: the conductor started as Debian's init script starts
// it (--log-file=...) logs to that file and not to stderr; after logrotate
// moved the file, SIGHUP makes a new one; debug = true written to
// magnum.conf applies on the next SIGHUP; SIGUSR2 writes the Guru
// Meditation Report; the conductor serves throughout (SIGHUP used to end the
// process).
func TestLogFileAndSIGHUP(t *testing.T) {
	dir := t.TempDir()
	conf := (&harness.Config{}).Write(t, dir)
	logFile := filepath.Join(dir, "magnum-conductor.log")
	p := harness.StartArgs(t, bins, conf, "--log-file="+logFile)

	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
	waitFor := func(path, want string) {
		t.Helper()
		if testkit.Poll(20*time.Second, func() bool { return strings.Contains(read(path), want) }) != nil {
			t.Fatalf("%s never held %q:\n%s", path, want, read(path))
		}
	}
	// oslo.log's line layout, as the Python service writes its log file.
	waitFor(logFile, " INFO magnum.conductor [-] starting magnum-conductor ")
	if strings.Contains(p.Log(), " INFO magnum.conductor") {
		t.Errorf("with --log-file the log also went to stderr:\n%s", p.Log())
	}

	// logrotate moves the file, then signals.
	if err := os.Rename(logFile, logFile+".1"); err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(logFile, "[-] SIGHUP: log file reopened")
	if strings.Contains(read(logFile+".1"), "[-] SIGHUP") {
		t.Errorf("the moved file got lines after SIGHUP:\n%s", read(logFile+".1"))
	}

	// debug is mutable: no DEBUG lines before, DEBUG lines after.
	if _, err := harness.CTL(bins, conf, "conductor", "ping"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(read(logFile), " DEBUG ") {
		t.Fatalf("DEBUG lines before debug = true:\n%s", read(logFile))
	}
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n[DEFAULT]\ndebug = true\n"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if err := p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(logFile, "debug=true")
	out, err := harness.CTL(bins, conf, "conductor", "ping")
	if err != nil || !strings.Contains(out, "true") {
		t.Fatalf("ping after SIGHUP: %v %s", err, out)
	}
	// A request's line: [global_request_id request_id user identity].
	waitFor(logFile, " DEBUG magnum.conductor.rpc [")
	if !regexp.MustCompile(` DEBUG magnum\.conductor\.rpc \[\S+ \S+ - - - - - -\] RPC method done .*method=ping_conductor `).MatchString(read(logFile)) {
		t.Errorf("no request line in oslo's layout:\n%s", read(logFile))
	}

	// kill -USR2: oslo.reports' Guru Meditation Report on stderr, as the
	// Python conductor writes it, with the goroutines and the redacted
	// configuration.
	if err := p.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	waitFor(logFile, " INFO magnum.conductor.gurumeditation [-] Guru Meditation Report written to=stderr")
	// The process has written the report; the pipe that carries its stderr
	// to p.Log() may still hold the end of it (the configuration).
	var report string
	_ = testkit.Poll(10*time.Second, func() bool { // checked below, with the rest of the report
		report = p.Log()
		return strings.Contains(report, "  transport_url = ****")
	})
	for _, want := range []string{"Guru Meditation", "product = magnum-conductor (Go)", "goroutine ", "  transport_url = ****"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report on stderr lacks %q:\n%s", want, report)
		}
	}
	if _, err := harness.CTL(bins, conf, "conductor", "ping"); err != nil {
		t.Fatalf("ping after SIGUSR2: %v", err)
	}
}
