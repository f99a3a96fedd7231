package oslolog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/openstack/magnum-conductor/config"
)

func TestLogPathAsOsloLog(t *testing.T) {
	for _, tc := range []struct{ file, dir, want string }{
		{"", "", ""},
		{"/var/log/magnum/c.log", "", "/var/log/magnum/c.log"},
		{"c.log", "/var/log/magnum", "/var/log/magnum/c.log"},
		{"", "/var/log/magnum", "/var/log/magnum/magnum-conductor.log"},
	} {
		o := Options{LogFile: tc.file, LogDir: tc.dir, Binary: "magnum-conductor"}
		if got := o.LogPath(); got != tc.want {
			t.Errorf("log_file %q log_dir %q: %q, want %q", tc.file, tc.dir, got, tc.want)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func open(t *testing.T, o Options) *Logging {
	t.Helper()
	l, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestFileFollowsLogrotate(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	l := open(t, Options{LogDir: dir, Binary: "magnum-conductor", Stderr: &stderr})
	path := filepath.Join(dir, "magnum-conductor.log")
	l.Logger.Info("first")
	// logrotate without copytruncate: the file is moved away.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	l.Logger.Info("second")
	if got := readFile(t, path+".1"); !strings.Contains(got, "[-] first") || strings.Contains(got, "second") {
		t.Errorf("moved file: %q", got)
	}
	if got := readFile(t, path); !strings.Contains(got, "[-] second") || strings.Contains(got, "first") {
		t.Errorf("new file: %q", got)
	}
	// copytruncate (Debian's logrotate for magnum): the next line starts
	// the file again instead of leaving a hole of zeros before it.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	l.Logger.Info("third")
	if got := readFile(t, path); !strings.HasPrefix(got, "20") || !strings.Contains(got, "[-] third") {
		t.Errorf("after copytruncate: %q", got)
	}
	// Reopen (SIGHUP) makes the file at once.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("Reopen did not create the file: %v", err)
	}
	if stderr.Len() != 0 {
		t.Errorf("with a log file and no use_stderr, stderr got %q", stderr.String())
	}
}

func TestSizeRotationKeepsMaxFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	f, err := openLogFile(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := strings.Repeat("x", 39) + "\n" // 40 bytes: two fit in 100
	for i := 0; i < 7; i++ {
		if _, err := f.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	// 7 lines, 2 per file: path holds 1, path.1 and path.2 hold 2 each,
	// the oldest 2 are gone.
	for name, want := range map[string]int{path: 40, path + ".1": 80, path + ".2": 80} {
		if st, err := os.Stat(name); err != nil || st.Size() != int64(want) {
			t.Errorf("%s: %v, size want %d", name, err, want)
		}
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("a third backup exists: %v", err)
	}
}

func TestNoRolloverWithoutBackups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	f, err := openLogFile(path, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 0; i < 3; i++ {
		_, _ = f.Write([]byte("0123456789\n"))
	}
	if st, _ := os.Stat(path); st == nil || st.Size() != 33 {
		t.Errorf("the file was rolled over without backups (as Python's RotatingFileHandler never does): %v", st)
	}
}

func TestStderrAsOsloLog(t *testing.T) {
	dir := t.TempDir()
	sock := listenUnixgram(t, filepath.Join(dir, "journal"))
	for _, tc := range []struct {
		name   string
		o      Options
		stderr bool
	}{
		{"nothing configured", Options{}, true},
		{"log file", Options{LogFile: filepath.Join(dir, "a.log")}, false},
		{"log file and use_stderr", Options{LogFile: filepath.Join(dir, "b.log"), UseStderr: true}, true},
		{"journal", Options{UseJournal: true, JournalSocket: sock.LocalAddr().String()}, false},
	} {
		var stderr bytes.Buffer
		tc.o.Stderr = &stderr
		l := open(t, tc.o)
		l.Logger.Info("hello")
		if got := strings.Contains(stderr.String(), "[-] hello"); got != tc.stderr {
			t.Errorf("%s: written to stderr = %v, want %v", tc.name, got, tc.stderr)
		}
	}
}

func TestDebugIsMutable(t *testing.T) {
	var out bytes.Buffer
	l := open(t, Options{Stderr: &out})
	l.Logger.Debug("hidden")
	l.SetDebug(true)
	l.Logger.Debug("shown")
	if strings.Contains(out.String(), "hidden") || !strings.Contains(out.String(), " DEBUG magnum [-] shown ") {
		t.Errorf("%q", out.String())
	}
}

// TestOsloLayout: the lines oslo.log's ContextFormatter writes with its
// default format strings, which log shippers parse.
func TestOsloLayout(t *testing.T) {
	var out bytes.Buffer
	l := open(t, Options{Stderr: &out, Binary: "magnum-conductor"})
	log := l.Logger.With("component", "rpc")
	log.Info("RPC method failed", "request_id", "req-1", "global_request_id", "req-g", "error", "disk on fire")
	log.Warn("no global id", "request_id", "req-2")
	log.With("request_id", "req-3", "user_id", "u1", "project_id", "p1", "user_domain_id", "default").Info("who")
	l.Logger.Error("periodic", "cluster", "c1")
	l.Logger.With("component", "db").WithGroup("g").Info("grouped", "request_id", "not-an-id")
	l.SetDebug(true)
	l.Logger.Debug("with source")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	pid := strconv.Itoa(os.Getpid())
	prefix := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} ` + pid + ` `)
	want := []string{
		`INFO magnum.conductor.rpc [req-g req-1 - - - - - -] RPC method failed error="disk on fire"`,
		`WARNING magnum.conductor.rpc [None req-2 - - - - - -] no global id`,
		`INFO magnum.conductor.rpc [None req-3 u1 p1 - - default -] who`,
		`ERROR magnum.conductor [-] periodic cluster=c1`,
		`INFO magnum.conductor.db [-] grouped g.request_id=not-an-id`,
		`DEBUG magnum.conductor [-] with source oslolog.TestOsloLayout ` + mustAbs(t, "oslolog_test.go") + `:`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for i, line := range lines {
		if !prefix.MatchString(line) || !strings.HasPrefix(prefix.ReplaceAllString(line, ""), want[i]) {
			t.Errorf("line %d:\n got %s\nwant <time> %s %s", i, line, pid, want[i])
		}
	}
	// log_date_format
	out.Reset()
	l = open(t, Options{Stderr: &out, DateFormat: "%d/%b/%y %I:%M:%S %p %%"})
	l.Logger.Info("x")
	if !regexp.MustCompile(`^\d\d/[A-Z][a-z]{2}/\d\d \d\d:\d\d:\d\d [AP]M %\.\d{3} `).MatchString(out.String()) {
		t.Errorf("log_date_format: %q", out.String())
	}
	at := time.Date(2026, 3, 7, 14, 5, 9, 0, time.UTC)
	if got := string(appendStrftime(nil, "%Y-%m-%d %H:%M:%S %j %a %A %B %Q", at)); got != "2026-03-07 14:05:09 066 Sat Saturday March %Q" {
		t.Errorf("strftime: %q", got)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestTextAndJSONLines(t *testing.T) {
	var text bytes.Buffer
	l := open(t, Options{Stderr: &text, Format: "text"})
	l.Logger.Info("hello", "request_id", "req-1")
	if !strings.HasPrefix(text.String(), "time=") || !strings.Contains(text.String(), "level=INFO msg=hello request_id=req-1") {
		t.Errorf("%q", text.String())
	}
}

func TestJSONLines(t *testing.T) {
	var out bytes.Buffer
	l := open(t, Options{Stderr: &out, UseJSON: true})
	l.Logger.Info("hello", "request_id", "req-1")
	if !strings.HasPrefix(out.String(), `{"time":`) || !strings.Contains(out.String(), `"request_id":"req-1"`) {
		t.Errorf("%q", out.String())
	}
}

func listenUnixgram(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func receive(t *testing.T, c *net.UnixConn) []byte {
	t.Helper()
	buf := make([]byte, 1<<16)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func TestSyslogSeverityAndFacility(t *testing.T) {
	sock := listenUnixgram(t, filepath.Join(t.TempDir(), "log"))
	l := open(t, Options{UseSyslog: true, SyslogFacility: "local0", Binary: "magnum-conductor",
		SyslogNetwork: "unixgram", SyslogAddr: sock.LocalAddr().String(), Stderr: &bytes.Buffer{}})
	l.Logger.With("request_id", "req-1").Warn("cluster stuck", "cluster", "c1")
	got := string(receive(t, sock))
	// <LOG_LOCAL0 (16<<3) | LOG_WARNING (4)>
	if !strings.HasPrefix(got, "<132>") || !strings.Contains(got, "magnum-conductor[") ||
		!strings.Contains(got, `msg="cluster stuck" request_id=req-1 cluster=c1`) || strings.Contains(got, "level=") {
		t.Errorf("%q", got)
	}
	l.Logger.Error("failed")
	if got := string(receive(t, sock)); !strings.HasPrefix(got, "<131>") {
		t.Errorf("error: %q", got)
	}
}

// journalFields parses the native protocol (NAME=value lines, and the
// binary form NAME\n<uint64 length><value>\n).
func journalFields(t *testing.T, b []byte) map[string]string {
	t.Helper()
	f := map[string]string{}
	for len(b) > 0 {
		i := bytes.IndexAny(b, "=\n")
		if i < 0 {
			t.Fatalf("bad datagram rest %q", b)
		}
		name := string(b[:i])
		if b[i] == '=' {
			j := bytes.IndexByte(b, '\n')
			f[name] = string(b[i+1 : j])
			b = b[j+1:]
			continue
		}
		n := binary.LittleEndian.Uint64(b[i+1 : i+9])
		f[name] = string(b[i+9 : i+9+int(n)])
		if b[i+9+int(n)] != '\n' {
			t.Fatalf("binary field %s not terminated", name)
		}
		b = b[i+10+int(n):]
	}
	return f
}

func TestJournalNativeFields(t *testing.T) {
	sock := listenUnixgram(t, filepath.Join(t.TempDir(), "journal"))
	l := open(t, Options{UseJournal: true, JournalSocket: sock.LocalAddr().String(), Binary: "magnum-conductor"})
	log := l.Logger.With("request_id", "req-1", "global_request_id", "req-g")
	log.Debug("not sent at INFO")
	log.Error("driver failed", "error", "line one\nline two")
	f := journalFields(t, receive(t, sock))
	want := map[string]string{"PRIORITY": "3", "SYSLOG_FACILITY": "1", "SYSLOG_IDENTIFIER": "magnum-conductor",
		"LOGGER_LEVEL": "ERROR", "REQUEST_ID": "req-1", "GLOBAL_REQUEST_ID": "req-g"}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %q, want %q (%v)", k, f[k], v, f)
		}
	}
	if f["MESSAGE"] != `msg="driver failed" request_id=req-1 global_request_id=req-g error="line one\nline two"` {
		t.Errorf("MESSAGE %q", f["MESSAGE"])
	}
	// Attributes inside a group are not request ids.
	l.Logger.WithGroup("g").Info("x", "request_id", "v")
	raw := journalFields(t, receive(t, sock))
	if raw["LOGGER_LEVEL"] != "INFO" || raw["REQUEST_ID"] != "" || raw["MESSAGE"] != "msg=x g.request_id=v" {
		t.Errorf("%v", raw)
	}
	// A value holding a newline (a multi-line message) takes the binary form.
	if got := journalField(nil, "MESSAGE", "a\nb"); !bytes.Equal(got, append(append([]byte("MESSAGE\n"),
		3, 0, 0, 0, 0, 0, 0, 0), "a\nb\n"...)) {
		t.Errorf("binary field %q", got)
	}
}

func TestOptionsOsloLogRefusesOrWarns(t *testing.T) {
	for _, o := range []Options{
		{UseEventlog: true},
		{RotationType: "weekly"},
		{UseSyslog: true, SyslogFacility: "LOG_NOPE"},
		{RotationType: "size", MaxFileSizeMB: 0, LogFile: "x"},
		{Format: "xml"},
		{LogFile: filepath.Join(t.TempDir(), "missing-dir", "c.log")},
		{LogFile: filepath.Join(t.TempDir(), "c.log"), RotationType: "interval", RotateIntervalType: "fortnightly", RotateInterval: 1},
		{LogFile: filepath.Join(t.TempDir(), "c.log"), RotationType: "interval", RotateIntervalType: "hours", RotateInterval: 0},
		{LogFile: filepath.Join(t.TempDir(), "c.log"), RotationType: "interval", RotateIntervalType: "weekday", RotateInterval: 7},
	} {
		if l, err := Open(o); err == nil {
			_ = l.Close()
			t.Errorf("%+v: no error", o)
		}
	}
	l := open(t, Options{LogConfigAppend: "/etc/magnum/logging.conf", RotationType: "Interval", Stderr: &bytes.Buffer{}})
	if len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "logging.conf") {
		t.Errorf("warnings %q", l.Warnings)
	}
	if f, err := parseFacility("LOG_LOCAL7"); err != nil || f != 23<<3 {
		t.Errorf("LOG_LOCAL7: %v %v", f, err)
	}
}

// TestDebianCommandLine: the options Debian's init script and oslo.log's
// users pass, over what magnum.conf says.
func TestDebianCommandLine(t *testing.T) {
	cfg, err := config.LoadSources([]config.Source{{Name: "magnum.conf",
		Data: []byte("[DEFAULT]\nlog_file = /tmp/from-file.log\ndebug = true\nuse_json = true\nlogdir = /var/log/old\n")}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Default.LogDir != "/var/log/old" {
		t.Fatalf("deprecated logdir not read: %q", cfg.Default.LogDir)
	}
	fs := pflag.NewFlagSet("magnum-conductor", pflag.ContinueOnError)
	var f Flags
	f.Register(fs)
	var files []string
	fs.StringArrayVar(&files, "config-file", nil, "")
	if err := fs.Parse([]string{"--config-file=/etc/magnum/magnum.conf",
		"--log-file=/var/log/magnum/magnum-conductor.log", "--use-syslog", "--nodebug", "--nouse-json",
		"--log-dir", ""}); err != nil {
		t.Fatal(err)
	}
	d := cfg.Default
	f.Apply(&d)
	if d.LogFile != "/var/log/magnum/magnum-conductor.log" || !d.UseSyslog || d.Debug || d.UseJSON || d.LogDir != "" {
		t.Errorf("after the command line: %+v", d)
	}
	// Untouched options keep the file's values; -d and the deprecated
	// --logfile spelling.
	fs = pflag.NewFlagSet("magnum-conductor", pflag.ContinueOnError)
	f = Flags{}
	f.Register(fs)
	if err := fs.Parse([]string{"-d", "--logfile", "/tmp/l.log"}); err != nil {
		t.Fatal(err)
	}
	d = config.DefaultOpts{UseJSON: true}
	f.Apply(&d)
	if !d.Debug || d.LogFile != "/tmp/l.log" || !d.UseJSON {
		t.Errorf("%+v", d)
	}
}

// fakeClock is a settable time source.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestTimedRotationAsPython: log_rotation_type = interval, as Python's
// TimedRotatingFileHandler rolls over: at the first write at or past the
// rollover time, the file is renamed after the start of its period, and only
// max_logfile_count dated files are kept.
func TestTimedRotationAsPython(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.log")
	clock := &fakeClock{time.Date(2026, 3, 7, 10, 15, 30, 0, time.Local)}
	f, err := openLogFile(path, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.timed, err = newTimedRotation("Hours", 1, 2, clock.t, clock.now); err != nil {
		t.Fatal(err)
	}
	write := func(at time.Time, line string) {
		t.Helper()
		clock.t = at
		if _, err := f.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	day := func(h, m int) time.Time { return time.Date(2026, 3, 7, h, m, 0, 0, time.Local) }
	write(day(10, 20), "a")
	write(day(11, 15).Add(30*time.Second), "b") // exactly at the rollover
	write(day(11, 40), "c")
	write(day(12, 16), "d")
	write(day(13, 17), "e")
	names := func() []string {
		m, _ := filepath.Glob(path + ".*")
		for i := range m {
			m[i] = filepath.Base(m[i])
		}
		return m
	}
	// c.log.2026-03-07_10 (a) was the oldest of three and is gone.
	if got := fmt.Sprint(names()); got != "[c.log.2026-03-07_11 c.log.2026-03-07_12]" {
		t.Errorf("backups %s", got)
	}
	for name, want := range map[string]string{path + ".2026-03-07_11": "b\nc\n", path + ".2026-03-07_12": "d\n", path: "e\n"} {
		if got := readFile(t, name); got != want {
			t.Errorf("%s = %q, want %q", filepath.Base(name), got, want)
		}
	}
}

func TestTimedRolloverTimes(t *testing.T) {
	local := func(d, h int) time.Time { return time.Date(2026, 3, d, h, 0, 0, 0, time.Local) }
	for _, tc := range []struct {
		kind     string
		interval int
		since    time.Time
		want     time.Time
	}{
		{"midnight", 1, local(7, 15), local(8, 0)},
		{"days", 2, local(7, 15), local(9, 15)},
		{"seconds", 30, local(7, 15), local(7, 15).Add(30 * time.Second)},
		// weekday: log_rotate_interval is the day (0 Monday); the rollover is
		// the midnight ending that day. 2026-03-09 is a Monday.
		{"weekday", 1, local(9, 10), local(11, 0)},  // Monday -> end of Tuesday
		{"weekday", 1, local(11, 10), local(18, 0)}, // Wednesday -> end of next Tuesday
		{"weekday", 0, local(9, 10), local(10, 0)},  // Monday, W0 -> end of this Monday
	} {
		r, err := newTimedRotation(tc.kind, tc.interval, 1, tc.since, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		if !r.at.Equal(tc.want) {
			t.Errorf("%s %d from %s: %s, want %s", tc.kind, tc.interval, tc.since, r.at, tc.want)
		}
	}
}
