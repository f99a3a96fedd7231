package service

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/harness"
)

// TestDebianInitScriptCommandLine: Debian's /etc/init.d/magnum-conductor
// starts the service with --config-file=... --log-file=...; the conductor
// must accept it and log to that file. The database is unreachable, so the
// start ends early, with the reason in the log file.
func TestDebianInitScriptCommandLine(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "magnum.conf")
	if err := os.WriteFile(conf, []byte("[DEFAULT]\ntransport_url = rabbit://guest:s3cret@127.0.0.1:1/\n"+
		"[database]\nconnection = mysql+pymysql://root:dbpa55@127.0.0.1:1/magnum\nmax_retries = 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "magnum-conductor.log")
	if code := Main([]string{"--config-file=" + conf, "--log-file=" + logFile, "--debug"}, Options{}); code != 1 {
		t.Fatalf("exit code %d, want 1 (no database)", code)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	// oslo.log's layout, as the Python service writes its log file.
	if !strings.Contains(got, " INFO magnum.conductor [-] starting magnum-conductor ") ||
		!strings.Contains(got, " DEBUG magnum.conductor [-] configuration ") ||
		!strings.Contains(got, ` ERROR magnum.conductor [-] magnum-conductor failed error="db: database mysql+pymysql://root:xxxxx@127.0.0.1:1/magnum unreachable`) {
		t.Errorf("log file:\n%s", got)
	}
	if strings.Contains(got, "s3cret") || strings.Contains(got, "dbpa55") {
		t.Errorf("a password was logged:\n%s", got)
	}
}

func TestUnknownFlagAndVersion(t *testing.T) {
	if code := Main([]string{"--no-such-flag"}, Options{Stderr: io.Discard}); code != 1 {
		t.Errorf("unknown flag: exit %d", code)
	}
	if code := Main([]string{"--version"}, Options{}); code != 0 {
		t.Errorf("--version: exit %d", code)
	}
}

// TestStopWhileWaitingForTheBrokerIsClean: SIGTERM while the conductor
// waits for an unreachable broker at start is a requested stop (exit 0),
// not a start-up failure.
func TestStopWhileWaitingForTheBrokerIsClean(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "magnum.conf")
	if err := os.WriteFile(conf, []byte("[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1:1/\n"+
		"[database]\nconnection = sqlite:///"+filepath.Join(dir, "m.sqlite")+"\n[conductor]\nmetrics_listen =\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out harness.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- serve(ctx, startup{files: []string{conf}}, &out) }()
	if testkit.Poll(60*time.Second, func() bool { return strings.Contains(out.String(), "AMQP server is unreachable") }) != nil {
		t.Fatalf("the conductor never waited for the broker:\n%s", out.String())
	}
	cancel() // SIGTERM
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `[-] magnum-conductor stopped before it finished starting interrupted=`) {
		t.Errorf("log:\n%s", out.String())
	}
}
