// Package exepages gives back the resident pages of the running executable
// that only start-up used.
//
// A Go binary's package initialisers (client-go's API types, the Prometheus
// client's descriptors, gorm, ...) run once, from every corner of the
// executable. The kernel maps 64 KiB around each page they touch, so when
// start-up is over about 20 MiB of the conductor's code and function tables
// are resident although an idle conductor uses about half of that. Release
// asks the kernel to reclaim the executable's read-only mappings
// (madvise MADV_PAGEOUT, Linux 5.4 and later). The pages are clean copies of
// the file, so nothing is lost: the ones the process still uses are read
// back on their next touch, and the page cache no longer holds the others.
package exepages

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrUnsupported is returned where the kernel cannot page out on request
// (not Linux, or older than 5.4).
var ErrUnsupported = errors.New("exepages: the kernel does not page out on request (needs Linux 5.4)")

// Mapping is one read-only mapping of the executable.
type Mapping struct {
	Start, End uintptr
	Perms      string
}

// Len is the mapping's size in bytes.
func (m Mapping) Len() uintptr { return m.End - m.Start }

// Release pages out every read-only mapping of the running executable and
// returns the number of bytes it covered (not the number that were resident).
func Release() (uintptr, error) {
	if !supported {
		return 0, ErrUnsupported
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	maps, err := ReadOnlyMappings(f, exe)
	if err != nil {
		return 0, err
	}
	if len(maps) == 0 {
		return 0, fmt.Errorf("exepages: no read-only mapping of %s in /proc/self/maps", exe)
	}
	var total uintptr
	for _, m := range maps {
		if err := pageOut(m.Start, m.Len()); err != nil {
			return total, err
		}
		total += m.Len()
	}
	return total, nil
}

// ReadOnlyMappings reads a /proc/PID/maps listing and returns the mappings of
// the file exe (as os.Executable names it) that are not writable (its code and read-only data; the
// writable data segment holds the process's own copies and is left alone).
func ReadOnlyMappings(r io.Reader, exe string) ([]Mapping, error) {
	want := filepath.Clean(exe)
	var out []Mapping
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		// A binary replaced on disk since it started (a package upgrade) is
		// listed with " (deleted)"; os.Executable trims that suffix.
		path := strings.TrimSuffix(strings.Join(fields[5:], " "), " (deleted)")
		if filepath.Clean(path) != want || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			return nil, fmt.Errorf("exepages: bad address range %q", fields[0])
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("exepages: bad address range %q", fields[0])
		}
		out = append(out, Mapping{Start: uintptr(start), End: uintptr(end), Perms: fields[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("exepages: reading the mappings: %w", err)
	}
	return out, nil
}
