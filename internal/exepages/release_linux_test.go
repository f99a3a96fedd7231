package exepages

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// tmpfsMagic is TMPFS_MAGIC (include/uapi/linux/magic.h).
const tmpfsMagic = 0x01021994

// residentExeKiB sums the Rss of the read-only mappings of exe in
// /proc/PID/smaps.
func residentExeKiB(t *testing.T, pid int, exe string) int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && strings.Join(fields[5:], " ") == exe && !strings.Contains(fields[1], "w")
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			n, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

// TestHelperProcess is the process TestReleaseLive measures: it waits for a
// line on stdin, releases, answers, and waits again, touching as little as
// it can between the measurements.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("EXEPAGES_HELPER") != "1" {
		t.Skip("helper process for TestReleaseLive")
	}
	// Without the kernel's 64 KiB fault-around (MADV_RANDOM), what the
	// helper touches again between the two measurements (writing its answer,
	// the scheduler, sysmon) comes back page by page, well below what Release
	// gives back even on a loaded machine.
	if err := adviseRandom(); err != nil {
		answer("error " + err.Error())
		os.Exit(1)
	}
	in := bufio.NewReader(os.Stdin)
	answer("ready")
	for {
		if line, err := in.ReadString('\n'); err != nil || line != "release\n" {
			os.Exit(0)
		}
		if _, err := Release(); err != nil {
			answer("error " + err.Error())
		} else {
			answer("released")
		}
	}
}

// adviseRandom turns off fault-around on the executable's read-only
// mappings (madvise MADV_RANDOM).
// answer writes one line to the test that runs this helper; when it cannot,
// that test has gone, and so does the helper.
func answer(line string) {
	if _, err := os.Stdout.WriteString(line + "\n"); err != nil {
		os.Exit(2)
	}
}

func adviseRandom() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer maps.Close()
	ms, err := ReadOnlyMappings(maps, exe)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.Start, m.Len(), syscall.MADV_RANDOM); errno != 0 {
			return errno
		}
	}
	return nil
}

func TestReleaseLive(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The helper runs from a copy of the test binary: pages this process maps
	// too are shared, and the kernel pages out only a process's own. The
	// copy is written back first, as reclaim leaves dirty page-cache pages
	// alone.
	dir := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err == nil && fs.Type == tmpfsMagic {
		t.Skipf("%s is a tmpfs: its pages are memory, not copies of a file, and cannot be paged out without swap", dir)
	}
	exe := filepath.Join(dir, "exepages-helper")
	if err := copyFile(exe, self); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "EXEPAGES_HELPER=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close() // the helper exits at end of input
		_ = cmd.Wait()    // its answers were checked; its exit status adds nothing
	}()
	out := bufio.NewReader(stdout)
	next := func() string {
		t.Helper()
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("helper: %v (read %q)", err, line)
		}
		return strings.TrimSpace(line)
	}
	if line := next(); line != "ready" {
		t.Fatalf("helper said %q, want ready", line)
	}
	before := residentExeKiB(t, cmd.Process.Pid, exe)
	if before < 512 {
		t.Fatalf("nothing to measure: %d KiB resident before Release", before)
	}
	// What else runs on the machine can make the helper touch more pages
	// again before it is measured: up to three releases, the least counts.
	after := before
	for try := 0; try < 3 && after > before/2; try++ {
		if _, err := stdin.Write([]byte("release\n")); err != nil {
			t.Fatal(err)
		}
		if line := next(); line != "released" {
			if strings.Contains(line, ErrUnsupported.Error()) {
				t.Skip(line)
			}
			t.Fatalf("helper said %q, want released", line)
		}
		after = min(after, residentExeKiB(t, cmd.Process.Pid, exe))
		t.Logf("resident pages of the helper's executable: %d KiB before Release, %d KiB after", before, after)
	}
	if after > before/2 {
		t.Errorf("resident pages of the helper's executable: %d KiB before Release, %d KiB after; want at most half", before, after)
	}
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o700)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close() // the copy's error is the one to report
		return err
	}
	if err := out.Sync(); err != nil {
		_ = out.Close() // the sync's error is the one to report
		return err
	}
	return out.Close()
}
