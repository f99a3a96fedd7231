// Command bench compares magnum-conductor with Debian's Python
// magnum-conductor 15.0.1 on this machine: both run at once on the same
// RabbitMQ, each with its own control exchange, topic and MariaDB database
// holding the same data, and one Go load generator drives them in turn.
// It prints a table and writes results/bench.json and results/bench.svg.
// See README.md.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/openstack/magnum-conductor/test/bench/load"
	"github.com/openstack/magnum-conductor/test/bench/procstat"
	"github.com/openstack/magnum-conductor/test/bench/rawamqp"
	"github.com/openstack/magnum-conductor/test/harness"
	"github.com/openstack/magnum-conductor/test/harness/pyrelease"
)

type options struct {
	duration  time.Duration
	warmup    time.Duration
	clusters  int
	creates   int
	callers   []int
	out       string
	timeout   time.Duration
	mysqlAddr string
	pyScript  string
	only      string
	py2026    bool
	rounds    int
	cpuprof   string
	commit    string
	gogc      int
}

func main() {
	o := options{callers: []int{1, 16}}
	flag.DurationVar(&o.duration, "duration", 4*time.Second, "measured time of each round of a throughput cell")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured warm-up before each cell")
	flag.StringVar(&o.commit, "commit", gitCommit(), "the commit measured, for the report (default: git rev-parse HEAD)")
	flag.StringVar(&o.cpuprof, "cpuprofile", "", "debugging: write the load generator's CPU profile here")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of every throughput cell (the table shows the median)")
	flag.IntVar(&o.clusters, "clusters", 100, "clusters seeded into both databases")
	flag.IntVar(&o.creates, "creates", 50, "cluster_create casts per server")
	flag.StringVar(&o.out, "out", "test/bench/results", "directory for bench.json and bench.svg")
	flag.DurationVar(&o.timeout, "timeout", 25*time.Minute, "the whole run's deadline")
	flag.StringVar(&o.mysqlAddr, "mysql", "127.0.0.1:3306", "MariaDB address (root, no password)")
	flag.StringVar(&o.pyScript, "python-conductor", "test/bench/python/run_conductor.py", "the Python conductor runner")
	flag.IntVar(&o.gogc, "loadgen-gogc", 400, "the load generator's GOGC (not the servers'): its garbage collection competes with the servers for the CPUs")
	render := flag.String("render", "", "print the table of an earlier run's bench.json (with this version's layout) and exit")
	flag.StringVar(&o.only, "only", "", "debugging: run only \"ours\" (no Python, no raw limit)")
	flag.BoolVar(&o.py2026, "python-2026", true, "also run Magnum 23.0.0's (2026.2) conductor, from the sid chroot `make services` builds (its own rows)")
	var rawServer rawamqp.Options
	var rawReplyFile, rawQueryDB string
	flag.StringVar(&rawServer.Exchange, "raw-server", "", "internal: run the raw amqp091-go reply server on this exchange")
	flag.StringVar(&rawServer.Queue, "raw-queue", "", "internal: the raw server's queue")
	flag.BoolVar(&rawServer.Confirm, "raw-confirm", false, "internal: the raw server publishes with confirms")
	flag.BoolVar(&rawServer.OsloWire, "raw-oslo-wire", false, "internal: the raw server answers with a recorded oslo reply and oslo's properties")
	flag.StringVar(&rawReplyFile, "raw-reply-file", "", "internal: with -raw-oslo-wire, the raw server answers with this file's bytes")
	flag.StringVar(&rawQueryDB, "raw-query-db", "", "internal: the raw server runs the Cluster.list query on this MariaDB database (at -mysql) before each reply")
	flag.Parse()
	if *render != "" {
		if err := renderTable(*render); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if rawServer.Exchange != "" {
		rawServer.URL = amqpURL()
		if err := serveRaw(rawServer, rawReplyFile, o.mysqlAddr, rawQueryDB); err != nil {
			fmt.Fprintln(os.Stderr, "bench raw server:", err)
			os.Exit(1)
		}
		return
	}

	// Only this process: the servers it starts get the environment as it
	// is, and the raw server (the same binary) returned above.
	debug.SetGCPercent(o.gogc)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stop()
		cancel()
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func run(ctx context.Context, o options) error {
	rep := &report{Date: time.Now().UTC().Format(time.RFC3339), Machine: machine(), Duration: o.duration.Seconds(), Rounds: o.rounds, Commit: o.commit,
		Clusters: o.clusters, Creates: o.creates, LoadGenGOGC: o.gogc}

	binDir, err := os.MkdirTemp("", "magnum-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	logf("building the binaries")
	bins, err := harness.Build(binDir)
	if err != nil {
		return err
	}

	admin, err := openAdmin(ctx, o.mysqlAddr)
	if err != nil {
		return err
	}
	defer admin.Close()
	py := &server{label: "python", exchange: randomName("bench_py_x_"), topic: randomName("bench_py_topic_")}
	py23 := &server{label: labelPython2026, exchange: randomName("bench_py23_x_"), topic: randomName("bench_py23_topic_"),
		versions: versions2026()}
	ours := &server{label: "ours", exchange: randomName("bench_go_x_"), topic: randomName("bench_go_topic_")}
	// Stop every server on every way out (error, SIGINT, deadline).
	defer ours.stop()
	defer py.stop()
	defer py23.stop()

	pyDB, err := createDatabase(ctx, admin, o.mysqlAddr, "magnum_bench_py_")
	if err != nil {
		return err
	}
	defer func() { _ = dropDatabase(admin, pyDB.name) }()
	goDB, err := createDatabase(ctx, admin, o.mysqlAddr, "magnum_bench_go_")
	if err != nil {
		return err
	}
	defer func() { _ = dropDatabase(admin, goDB.name) }()

	// One Cluster.list result of ours: the raw limit's list-sized reply.
	var listResult []byte
	servers := []*server{py, ours}
	if o.only == "ours" {
		servers = []*server{ours}
	} else if err := startPython(ctx, o, pyrelease.Magnum15, py, pyDB, binDir, admin, &rep.PythonSchema); err != nil {
		return err
	}
	if o.only == "" && o.py2026 {
		// 2026.2, what a new deployment runs: its own database, after
		// the others in every round.
		py23DB, err := createDatabase(ctx, admin, o.mysqlAddr, "magnum_bench_py23_")
		if err != nil {
			return err
		}
		defer func() { _ = dropDatabase(admin, py23DB.name) }()
		rep.Python2026 = &sideResult{}
		if err := startPython(ctx, o, pyrelease.Magnum23, py23, py23DB, binDir, admin, &rep.Python2026Schema); err != nil {
			return err
		}
		servers = append(servers, py23)
	}

	// Ours at head, on its own schema.
	if err := writeConf(binDir, ours, goDB.url); err != nil {
		return err
	}
	logf("ours: magnum-db-manage upgrade")
	if err := runCommand(ctx, 5*time.Minute, bins.DBManage, "--config-file", ours.conf, "upgrade"); err != nil {
		return err
	}
	logf("ours: starting %s", bins.Conductor)
	if err := ours.start([]string{bins.Conductor, "--config-file", ours.conf}); err != nil {
		return err
	}
	if err := ours.connect(); err != nil {
		return err
	}
	if err := ours.waitPing(ctx, time.Minute); err != nil {
		return err
	}

	seed := newSeed(o.clusters)
	for _, s := range servers {
		logf("%s: seeding 1 template, %d clusters, %d nodegroups through object_action create", s.label, len(seed.clusters), len(seed.ngs))
		t0 := time.Now()
		if err := seed.seed(ctx, s); err != nil {
			return err
		}
		cctx, ccancel := context.WithTimeout(ctx, time.Minute)
		n, err := listClusters(cctx, s)
		ccancel()
		if err != nil {
			return err
		}
		if n != o.clusters {
			return fmt.Errorf("%s: Cluster.list returned %d clusters, want %d", s.label, n, o.clusters)
		}
		raw, err := listRaw(ctx, s)
		if err != nil {
			return err
		}
		rep.side(s.label).ListBytes = len(raw)
		if s == ours {
			listResult = raw
		}
		if n := countClusters(raw); n != o.clusters {
			return fmt.Errorf("%s: counting the Cluster.list primitives gives %d, want %d", s.label, n, o.clusters)
		}
		logf("%s: seeded in %.1fs", s.label, time.Since(t0).Seconds())
	}

	if rep.Python2026 != nil {
		// Ours' Cluster.list as 2026.2 asks for it, for the 23.0.0 rows.
		as2026 := *ours
		as2026.versions = versions2026()
		raw, err := listRaw(ctx, &as2026)
		if err != nil {
			return err
		}
		if n := countClusters(raw); n != o.clusters {
			return fmt.Errorf("ours: Cluster.list as 2026.2 asks holds %d clusters, want %d", n, o.clusters)
		}
		rep.OursListBytes2026 = len(raw)
	}

	// Memory after seeding, and idle memory once start-up has settled (ours
	// gives back its start-up pages 15 s after it serves): both servers up,
	// seeded, nothing in flight.
	if err := sleepCtx(ctx, 5*time.Second); err != nil {
		return err
	}
	for _, s := range servers {
		side := rep.side(s.label)
		if side.SeededMem, err = procstat.Memory(s.pid()); err != nil {
			return err
		}
		logf("5 s after seeding: %s RSS %.1f MiB (anonymous %.1f) PSS %.1f MiB (%d processes)", s.label,
			bytesMiB(side.SeededMem.RSS), bytesMiB(side.SeededMem.Anon), bytesMiB(side.SeededMem.PSS), side.SeededMem.Procs)
	}
	for _, s := range servers {
		if err := sleepCtx(ctx, time.Until(s.serving.Add(idleAfter))); err != nil {
			return err
		}
	}
	rep.IdleAfter = idleAfter.Seconds()
	samplers := map[*server]*procstat.Sampler{}
	cpu0 := map[*server]float64{}
	for _, s := range servers {
		side := rep.side(s.label)
		if side.IdleMem, err = procstat.Memory(s.pid()); err != nil {
			return err
		}
		logf("idle, %s after start: %s RSS %.1f MiB (anonymous %.1f) PSS %.1f MiB (%d processes)", idleAfter, s.label,
			bytesMiB(side.IdleMem.RSS), bytesMiB(side.IdleMem.Anon), bytesMiB(side.IdleMem.PSS), side.IdleMem.Procs)
	}
	for _, s := range servers {
		samplers[s] = procstat.StartSampler(ctx, s.pid(), 500*time.Millisecond)
		cpu0[s] = procstat.CPU(s.pid())
	}
	runStart := time.Now()
	rep.LoadAvg = append(rep.LoadAvg, loadavg())

	if o.cpuprof != "" {
		f, err := os.Create(o.cpuprof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	lopts := load.Options{Warmup: o.warmup, Duration: o.duration, CallTimeout: 60 * time.Second}
	var listReplyFile string
	if o.only == "" {
		body := listReply(listResult)
		rep.ListReplyBytes = len(body)
		f, err := os.CreateTemp("", "bench-list-reply-*.json")
		if err != nil {
			return err
		}
		listReplyFile = f.Name()
		defer os.Remove(listReplyFile)
		if _, err := f.Write(body); err != nil {
			_ = f.Close() // the write's error is the one to report
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	// oursAs2026 is ours reached with 2026.2's calls (the same process).
	oursAs2026 := *ours
	oursAs2026.versions = versions2026()
	cell := func(name string, s *server, callers int, fn func(context.Context) error) load.Result {
		logf("%s: %s, %d callers", s.label, name, callers)
		c0 := procstat.CPU(s.pid())
		lo := lopts
		lo.Callers = callers
		r := load.Run(ctx, lo, fn)
		rep.side(s.label).CPUOwn += procstat.CPU(s.pid()) - c0
		logf("  %.1f/s p50 %.2f ms p99 %.2f ms, %d errors %s", r.PerSec, r.P50ms, r.P99ms, r.Errors, r.FirstErr)
		return r
	}
	ping := func(s *server) func(context.Context) error {
		return func(ctx context.Context) error {
			ok, err := s.api.PingConductor(adminCtx(ctx))
			if err == nil && !ok {
				err = errors.New("ping_conductor answered false")
			}
			return err
		}
	}
	list := func(s *server) func(context.Context) error {
		// Cluster.list as magnum-api sends it (2026.2's call when
		// s.versions is set).
		return func(ctx context.Context) error {
			got, err := listClustersFast(ctx, s)
			if err == nil && got != o.clusters {
				err = fmt.Errorf("Cluster.list returned %d clusters, want %d", got, o.clusters)
			}
			return err
		}
	}

	// Rounds of cells of one kind run back to back (limit, Python, ours)
	// so that they share the machine's conditions of the moment; each
	// figure is the median of its rounds.
	type key struct {
		who, kind string
		n         int
	}
	rounds := map[key][]load.Result{}
	for round := 1; round <= o.rounds; round++ {
		logf("round %d of %d", round, o.rounds)
		for _, n := range o.callers {
			if o.only == "" {
				for _, v := range []struct {
					kind               string
					confirm, osloWire  bool
					replyFile, queryDB string
				}{{"confirm", true, false, "", ""}, {"noconfirm", false, false, "", ""}, {"oslowire", true, true, "", ""},
					{"listwire", true, true, listReplyFile, ""}, {"listquery", true, true, listReplyFile, goDB.name}} {
					r, err := rawCell(ctx, lopts, n, v.confirm, v.osloWire, v.replyFile, o.mysqlAddr, v.queryDB)
					if err != nil {
						return err
					}
					k := key{"raw", v.kind, n}
					rounds[k] = append(rounds[k], r)
				}
			}
			for _, s := range servers {
				k := key{s.label, "ping", n}
				rounds[k] = append(rounds[k], cell("ping_conductor", s, n, ping(s)))
			}
		}
		for _, n := range o.callers {
			for _, s := range servers {
				k := key{s.label, "list", n}
				rounds[k] = append(rounds[k], cell(fmt.Sprintf("Cluster.list of %d", o.clusters), s, n, list(s)))
			}
			if rep.Python2026 != nil {
				// Ours again, called as magnum-api 2026.2 calls it, for
				// the 23.0.0 rows.
				k := key{"ours", "list2026", n}
				rounds[k] = append(rounds[k], cell(fmt.Sprintf("Cluster.list of %d as 2026.2 asks", o.clusters),
					&oursAs2026, n, list(&oursAs2026)))
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	for _, n := range o.callers {
		if o.only == "" {
			rep.Raw = append(rep.Raw, load.Combine(rounds[key{"raw", "confirm", n}]))
			rep.RawNoConfirm = append(rep.RawNoConfirm, load.Combine(rounds[key{"raw", "noconfirm", n}]))
			rep.RawOsloWire = append(rep.RawOsloWire, load.Combine(rounds[key{"raw", "oslowire", n}]))
			rep.RawListWire = append(rep.RawListWire, load.Combine(rounds[key{"raw", "listwire", n}]))
			rep.RawListQuery = append(rep.RawListQuery, load.Combine(rounds[key{"raw", "listquery", n}]))
		}
		for _, s := range servers {
			side := rep.side(s.label)
			side.Ping = append(side.Ping, load.Combine(rounds[key{s.label, "ping", n}]))
			side.List = append(side.List, load.Combine(rounds[key{s.label, "list", n}]))
		}
		if rep.Python2026 != nil {
			rep.OursList2026 = append(rep.OursList2026, load.Combine(rounds[key{"ours", "list2026", n}]))
		}
	}
	for _, s := range servers {
		side := rep.side(s.label)
		logf("%s: %d cluster_create casts", s.label, o.creates)
		c0 := procstat.CPU(s.pid())
		side.Create = creates(ctx, s, seed, o.creates)
		cpu := procstat.CPU(s.pid()) - c0
		side.Create.CPUSeconds = cpu
		side.CPUOwn += cpu
		logf("  %d complete in %.2fs: %.2f clusters/s, %d failed, %d errors %s", side.Create.Completed, side.Create.Seconds,
			side.Create.PerSec, side.Create.Failed, side.Create.Errors, side.Create.FirstErr)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rep.RunSeconds = time.Since(runStart).Seconds()
	for _, s := range servers {
		side := rep.side(s.label)
		side.CPURun = procstat.CPU(s.pid()) - cpu0[s]
		var n int
		side.PeakMem, n = samplers[s].Stop()
		rep.SamplerErrors += n
	}

	rep.LoadAvg = append(rep.LoadAvg, loadavg())
	table := rep.table()
	fmt.Print(table)
	if err := rep.write(o.out, table); err != nil {
		return err
	}
	if n := rep.errors(); n > 0 {
		return fmt.Errorf("%d errors during the run (see the table)", n)
	}
	return nil
}

// startPython makes the schema of release r's Python conductor with its
// own magnum-db-manage (alembic head 7da8489d6a68 for 15.0.1), starts it
// (on the host, or in the release's chroot) and waits for its ping.
func startPython(ctx context.Context, o options, r pyrelease.Release, py *server, pyDB *database, dir string, admin *sql.DB, schema *string) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("%s: %w (run make services, or -python-2026=false)", r, err)
	}
	if err := writeConf(dir, py, pyDB.url); err != nil {
		return err
	}
	chroot := func(argv ...string) []string {
		if r.Root == "" {
			return argv
		}
		return append([]string{"chroot", r.Root}, argv...)
	}
	logf("%s: %s magnum-db-manage upgrade", py.label, r)
	up := chroot("/usr/bin/magnum-db-manage", "--config-file", py.conf, "upgrade")
	if err := runCommand(ctx, 5*time.Minute, up[0], up[1:]...); err != nil {
		return err
	}
	if err := admin.QueryRowContext(ctx, "SELECT version_num FROM `"+pyDB.name+"`.alembic_version").Scan(schema); err != nil {
		return fmt.Errorf("%s schema version: %w", py.label, err)
	}
	script, err := filepath.Abs(o.pyScript)
	if err != nil {
		return err
	}
	if r.Root != "" {
		// The chroot sees /tmp only: run a copy of test/bench/python.
		scripts, err := r.ScriptsIn(filepath.Join(dir, "scripts-"+r.Name))
		if err != nil {
			return err
		}
		script = filepath.Join(scripts, "test/bench/python", filepath.Base(o.pyScript))
	}
	logf("%s: starting %s %s (workers = CPU count)", py.label, r, o.pyScript)
	if err := py.start(chroot(pyrelease.Python, "-W", "ignore::DeprecationWarning", script, "--config-file", py.conf)); err != nil {
		return err
	}
	if err := py.connect(); err != nil {
		return err
	}
	return py.waitPing(ctx, 3*time.Minute)
}

// idleAfter is how long every server has served when its idle memory is
// taken: start-up has settled (ours pages out its start-up code 15 s after
// it serves), and the periodic jobs and the heartbeat have run since.
const idleAfter = 30 * time.Second

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// createResult is the end-to-end create measurement.
type createResult struct {
	Casts     int     `json:"casts"`
	Completed int     `json:"completed"`
	Failed    int     `json:"failed"`
	Errors    int     `json:"errors"`
	Seconds   float64 `json:"seconds"`
	PerSec    float64 `json:"per_sec"`
	// CPUSeconds is the server's CPU time (whole process tree) during the
	// create cell.
	CPUSeconds float64 `json:"cpu_seconds"`
	FirstErr   string  `json:"first_error,omitempty"`
}

// creates sends n cluster_create casts (1 master, 1 worker each, as
// magnum-api's defaults) and polls Cluster.get_by_uuid, in cast order,
// until every cluster has left CREATE_IN_PROGRESS. The clock runs from the
// first cast to the last cluster seen CREATE_COMPLETE.
func creates(ctx context.Context, s *server, seed *seedData, n int) createResult {
	res := createResult{Casts: n}
	fail := func(err error) {
		res.Errors++
		if res.FirstErr == "" {
			res.FirstErr = err.Error()
		}
	}
	ids := make([]string, 0, n)
	start := time.Now()
	timeout := 60
	for i := range n {
		id, prim, err := createPrimitive(seed.template, fmt.Sprintf("bench-new-%s-%03d", s.label, i))
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err = s.api.ClusterCreateAsync(adminCtx(cctx), prim, 1, 1, &timeout)
			cancel()
		}
		if err != nil {
			fail(err)
			continue
		}
		ids = append(ids, id)
	}
	deadline := time.Now().Add(5 * time.Minute)
	last := start
	for _, id := range ids {
		for {
			if time.Now().After(deadline) || ctx.Err() != nil {
				fail(fmt.Errorf("cluster %s not complete within the deadline", id))
				break
			}
			// rpc_response_timeout's default, as magnum-api waits. A poll
			// that fails (a timeout, or an exception the server raised)
			// counts as an error; polling goes on until the deadline.
			cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			st, err := getStatus(cctx, s, id)
			cancel()
			if err != nil {
				fail(err)
				_ = sleepCtx(ctx, 100*time.Millisecond)
				continue
			}
			if st == "CREATE_COMPLETE" {
				res.Completed++
				last = time.Now()
				break
			}
			if st != "" && !strings.HasSuffix(st, "_IN_PROGRESS") {
				res.Failed++
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	res.Seconds = last.Sub(start).Seconds()
	if res.Seconds > 0 {
		res.PerSec = float64(res.Completed) / res.Seconds
	}
	return res
}

// gitCommit is the checked-out commit, or "" outside a git work tree.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// loadavg is the 1, 5 and 15 minute load average of the machine.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s, %d CPUs (%s), %s/%s, %s", host, runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
