package gurumeditation

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

func testReport(t *testing.T) Report {
	t.Helper()
	cfg, err := config.LoadSources([]config.Source{{Name: "magnum.conf",
		Data: []byte("[DEFAULT]\ntransport_url = rabbit://magnum:s3cret@rabbit:5672/\n[conductor]\ntopic = t1\n")}})
	if err != nil {
		t.Fatal(err)
	}
	return Report{Service: "magnum-conductor", Version: "v1.2.3", Config: cfg}
}

func TestReportSections(t *testing.T) {
	var out bytes.Buffer
	if err := testReport(t).Write(&out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"====                        Guru Meditation                         ====",
		"product = magnum-conductor (Go)", "version = v1.2.3",
		"====                            Threads                             ====",
		"gurumeditation.TestReportSections", // this goroutine's own stack
		"goroutines = ", "\nconductor:\n  topic = t1\n", "  transport_url = ****\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(got, "s3cret") {
		t.Error("the transport_url password is in the report")
	}
}

func TestDumpToLogDirAsOsloReports(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 30, 6, 40, 5, 0, time.UTC)
	where, err := testReport(t).Dump(dir, nil, at)
	if err != nil {
		t.Fatal(err)
	}
	if where != filepath.Join(dir, "magnum-conductor_gurumeditation_20261130064005") {
		t.Fatalf("written to %s", where)
	}
	b, err := os.ReadFile(where)
	if err != nil || !strings.Contains(string(b), "Guru Meditation") {
		t.Fatalf("%v %q", err, b)
	}
}

type chanWriter struct {
	ch chan string
}

// Write passes p on, or drops it when nobody reads any more.
func (l chanWriter) Write(p []byte) (int, error) {
	select {
	case l.ch <- string(p):
	default:
	}
	return len(p), nil
}

func TestSIGUSR2WritesTheReport(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := chanWriter{ch: make(chan string, 100)}
	go testReport(t).Serve(ctx, Options{Stderr: out}, slog.New(slog.DiscardHandler))
	deadline := time.After(10 * time.Second)
	for {
		// The handler may not be installed yet: signal until a report comes.
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-out.ch:
			if !strings.Contains(s, "Guru Meditation") {
				t.Fatalf("%q", s)
			}
			return
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no report after SIGUSR2")
		}
	}
}

func TestFileEventTriggersTheReport(t *testing.T) {
	dir := t.TempDir()
	trigger := filepath.Join(dir, "trigger")
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go testReport(t).Serve(ctx, Options{LogDir: dir, FileEventHandler: trigger,
		FileEventHandlerInterval: 20 * time.Millisecond}, slog.New(slog.DiscardHandler))
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(trigger, future, future); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "magnum-conductor_gurumeditation_*"))
		return len(m) == 1
	}, "no report file after the trigger file changed")
}
