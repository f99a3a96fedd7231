// Command resident shows which parts of a running process's executable are
// resident: it reads /proc/PID/pagemap for the executable's mappings and
// attributes every resident page to the symbol that starts at or before it
// (from `go tool nm`), summed by package. It is how the idle-memory figures
// in docs/benchmarks.md were taken apart (run it as root: pagemap needs it).
//
//	go run ./test/bench/resident -pid $(pgrep -f 'magnum-conductor --config-file')
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

type symbol struct {
	addr uint64
	name string
}

func main() {
	pid := flag.Int("pid", 0, "the process")
	top := flag.Int("top", 40, "rows to print")
	flag.Parse()
	if *pid == 0 {
		fmt.Fprintln(os.Stderr, "resident: -pid is required")
		os.Exit(2)
	}
	if err := run(*pid, *top); err != nil {
		fmt.Fprintln(os.Stderr, "resident:", err)
		os.Exit(1)
	}
}

func run(pid, top int) error {
	proc := "/proc/" + strconv.Itoa(pid)
	exe, err := os.Readlink(proc + "/exe")
	if err != nil {
		return err
	}
	syms, err := symbols(exe)
	if err != nil {
		return err
	}
	maps, err := os.Open(proc + "/maps")
	if err != nil {
		return err
	}
	defer maps.Close()
	pagemap, err := os.Open(proc + "/pagemap")
	if err != nil {
		return err
	}
	defer pagemap.Close()
	pages := map[string]int{}
	total := 0
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[5] != exe {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		for page := start; page < end; page += 4096 {
			var entry [8]byte
			if _, err := pagemap.ReadAt(entry[:], int64(page/4096*8)); err != nil {
				return fmt.Errorf("pagemap: %w", err)
			}
			if binary.LittleEndian.Uint64(entry[:])&(1<<63) == 0 {
				continue // not present
			}
			total++
			i := sort.Search(len(syms), func(i int) bool { return syms[i].addr > page }) - 1
			name := "?"
			if i >= 0 {
				name = syms[i].name
			}
			pages[f[1]+" "+packageOf(name)]++
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	type row struct {
		key   string
		pages int
	}
	var rows []row
	for k, n := range pages {
		rows = append(rows, row{k, n})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].pages > rows[j].pages })
	fmt.Printf("%s: %d resident pages (%.1f MiB)\n", exe, total, float64(total)*4096/(1<<20))
	for i, r := range rows {
		if i == top {
			break
		}
		fmt.Printf("%8d KiB  %s\n", r.pages*4, r.key)
	}
	return nil
}

// symbols lists the executable's symbols by address.
func symbols(exe string) ([]symbol, error) {
	out, err := exec.Command("go", "tool", "nm", "-sort", "address", exe).Output()
	if err != nil {
		return nil, fmt.Errorf("go tool nm: %w", err)
	}
	var syms []symbol
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			continue
		}
		syms = append(syms, symbol{addr, strings.Join(f[2:], " ")})
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].addr < syms[j].addr })
	return syms, nil
}

// packageOf is the package path of a symbol name; the runtime's large
// tables (runtime.pclntab, runtime.types ...) keep their own names.
func packageOf(name string) string {
	switch {
	case strings.HasPrefix(name, "runtime.") && !strings.ContainsAny(name[len("runtime."):], ".(/"):
		return name
	case strings.HasPrefix(name, "type:"):
		return "type:"
	case strings.HasPrefix(name, "go:"):
		if i := strings.IndexAny(name, ".*"); i > 0 {
			return name[:i]
		}
		return name
	}
	slash := strings.LastIndex(name, "/")
	if dot := strings.Index(name[slash+1:], "."); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}
