package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/openstack/magnum-conductor/test/bench/load"
	"github.com/openstack/magnum-conductor/test/bench/procstat"
)

// sideResult is one server's figures.
type sideResult struct {
	Ping   []load.Result `json:"ping_conductor"`
	List   []load.Result `json:"cluster_list"`
	Create createResult  `json:"cluster_create"`
	// SeededMem is taken 5 s after seeding, IdleMem once the server has
	// also served for idleAfter.
	SeededMem procstat.Mem `json:"seeded_memory"`
	IdleMem   procstat.Mem `json:"idle_memory"`
	PeakMem   procstat.Mem `json:"peak_memory"`
	// CPURun is the CPU seconds of the server's process tree over the
	// whole load phase; CPUOwn over its own cells only.
	CPURun float64 `json:"cpu_seconds_run"`
	CPUOwn float64 `json:"cpu_seconds_own_cells"`
	// ListBytes is the size of one Cluster.list result (the "result" of
	// the reply, as the client received it).
	ListBytes int `json:"cluster_list_result_bytes"`
}

type report struct {
	Date         string     `json:"date"`
	Machine      string     `json:"machine"`
	Commit       string     `json:"commit"`
	Duration     float64    `json:"cell_seconds"`
	Rounds       int        `json:"rounds"`
	LoadAvg      []string   `json:"loadavg_start_end"`
	Clusters     int        `json:"clusters_seeded"`
	Creates      int        `json:"creates"`
	PythonSchema string     `json:"python_alembic_revision"`
	Notes        []string   `json:"notes"`
	Python       sideResult `json:"python"`
	Ours         sideResult `json:"ours"`
	// Python2026 is Magnum 23.0.0's (2026.2) conductor from the sid
	// chroot, in its own rows (nil when it did not run).
	Python2026       *sideResult `json:"python_2026_2,omitempty"`
	Python2026Schema string      `json:"python_2026_2_alembic_revision,omitempty"`
	// OursList2026 is ours' Cluster.list called as magnum-api 2026.2 calls
	// it (object_class_action_versions, Cluster 1.24), beside Python2026's.
	OursList2026      []load.Result `json:"ours_list_2026_2,omitempty"`
	OursListBytes2026 int           `json:"ours_list_bytes_2026_2,omitempty"`
	Raw               []load.Result `json:"raw_amqp_confirms"`
	RawNoConfirm      []load.Result `json:"raw_amqp_no_confirms"`
	RawOsloWire       []load.Result `json:"raw_amqp_oslo_wire"`
	// RawListWire is RawOsloWire answering with one of ours' Cluster.list
	// replies (ListReplyBytes long): the ceiling of Cluster.list for any
	// server, before any database work or JSON.
	RawListWire []load.Result `json:"raw_amqp_list_reply,omitempty"`
	// RawListQuery is RawListWire running the Cluster.list query on ours'
	// database before each reply (rows read, not decoded): the ceiling of
	// any server that reads the clusters from the database.
	RawListQuery   []load.Result `json:"raw_amqp_list_query_reply,omitempty"`
	ListReplyBytes int           `json:"list_reply_bytes,omitempty"`
	RunSeconds     float64       `json:"run_seconds"`
	SamplerErrors  int           `json:"memory_sampler_errors"`
	LoadGenGOGC    int           `json:"load_generator_gogc"`
	// IdleAfter is how long every server had served when the idle memory
	// was taken (0 in runs before it was recorded: 5 s after seeding).
	IdleAfter float64 `json:"idle_after_seconds"`
}

// idleLabel names the idle-memory row.
func idleLabel(r *report) string {
	if r.IdleAfter == 0 {
		return "idle memory (MiB)"
	}
	return fmt.Sprintf("idle memory, %.0f s after start (MiB)", r.IdleAfter)
}

// labelPython2026 is the label of Magnum 23.0.0's conductor.
const labelPython2026 = "python-23.0.0"

func (r *report) side(label string) *sideResult {
	switch label {
	case "python":
		return &r.Python
	case labelPython2026:
		if r.Python2026 == nil {
			r.Python2026 = &sideResult{}
		}
		return r.Python2026
	}
	return &r.Ours
}

func (r *report) notes() []string {
	return []string{
		"Python: Debian's magnum-conductor 15.0.1 (test/bench/python/run_conductor.py), workers = CPU count; " +
			"Magnum 15.0.1's Keystone trust step (create_trustee_and_trust) is stubbed out (no Keystone here), " +
			"the trustee domain its database layer would ask Keystone for is [trust]/trustee_domain_id " +
			"(the all-tenants calls here never ask), " +
			"and a zero-delay out-of-tree driver completes every create inside create_cluster.",
		"Ours: bin/magnum-conductor with the simulated driver at operation_delay 0 (a create completes inside the driver call).",
		"Both: same RabbitMQ, own control_exchange/topic, own MariaDB database with 1 template and the same clusters " +
			"(1 master + 1 worker nodegroup each), seeded through each conductor's object_action create.",
		"Load: one Go client (api/oslo + api/conductorapi), admin all-tenants context; Cluster.list at objver 1.23 with " +
			"limit 1000, sort id asc, as magnum-api 15.0.1 sends it. " +
			fmt.Sprintf("The load generator runs with GOGC=%d, so that its own garbage collection takes less of ", r.LoadGenGOGC) +
			"the CPUs it shares with the servers; every server (Python, ours, the raw one) runs with its defaults.",
		"Limit: raw amqp091-go request/reply on the same broker, no envelope; 'confirms' keeps oslo's publisher confirms " +
			"and acks (the reference for ours/limit); 'no confirms' is fire-and-forget publishing; 'oslo's wire' is the " +
			"confirms variant carrying the recorded ping_conductor request and reply bodies with oslo's properties " +
			"(persistent, JSON content type, expiration, empty headers), still without any Go-side JSON: what the wire " +
			"format alone costs the broker and the sockets (its ours/limit column is ours against it). " +
			"'a Cluster.list reply' is the same answering with one of ours' Cluster.list replies as its bytes: the " +
			"ceiling of Cluster.list for any server, with no database query and no JSON; its columns are that " +
			"ceiling over Python and ours over it. 'after the list's query' also runs, before each reply, the " +
			"query our store runs for that list on ours' database, its rows read without decoding: the ceiling " +
			"of any server that reads the clusters from MariaDB.",
	}
}

func (r *report) errors() int {
	n := r.Python.Create.Errors + r.Python.Create.Failed + r.Ours.Create.Errors + r.Ours.Create.Failed + r.SamplerErrors
	rss := [][]load.Result{r.Python.Ping, r.Python.List, r.Ours.Ping, r.Ours.List, r.Raw, r.RawNoConfirm, r.RawOsloWire, r.RawListWire, r.RawListQuery}
	if p := r.Python2026; p != nil {
		n += p.Create.Errors + p.Create.Failed
		rss = append(rss, p.Ping, p.List, r.OursList2026)
	}
	for _, rs := range rss {
		for _, x := range rs {
			n += x.Errors
		}
	}
	return n
}

func rate(x load.Result) string {
	return fmt.Sprintf("%.0f/s (p50 %.2f, p99 %.2f ms)", x.PerSec, x.P50ms, x.P99ms)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	v := a / b
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f×", v)
	case v >= 1:
		return fmt.Sprintf("%.1f×", v)
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

func mib(b int64) float64 { return bytesMiB(b) }

// table renders the comparison; the last two columns are ours/Python and
// ours/limit.
func (r *report) table() string {
	r.Notes = r.notes()
	var b bytes.Buffer
	fmt.Fprintf(&b, "magnum-conductor benchmark, %s, commit %s\nmachine: %s\n", r.Date, r.Commit, r.Machine)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "* %s\n", n)
	}
	fmt.Fprintf(&b, "* Python schema at alembic %s; each throughput figure is the median of %d rounds of %.0f s, "+
		"rounds interleaved (limit, Python, ours); load average at start / end: %s.\n\n",
		r.PythonSchema, r.Rounds, r.Duration, strings.Join(r.LoadAvg, " / "))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tpython 15.0.1\tours\traw amqp limit\tours/python\tours/limit\t")
	for i := range r.Raw {
		if i >= len(r.Python.Ping) || i >= len(r.Ours.Ping) {
			break
		}
		p, o, l := r.Python.Ping[i], r.Ours.Ping[i], r.Raw[i]
		fmt.Fprintf(tw, "ping_conductor, %d callers\t%s\t%s\t%s\t%s\t%s\t\n", o.Callers, rate(p), rate(o), rate(l),
			ratio(o.PerSec, p.PerSec), ratio(o.PerSec, l.PerSec))
	}
	for i := range r.Ours.List {
		if i >= len(r.Python.List) {
			break
		}
		p, o := r.Python.List[i], r.Ours.List[i]
		limit, ofLimit := "-", "-"
		if i < len(r.RawListWire) {
			limit, ofLimit = rate(r.RawListWire[i]), ratio(o.PerSec, r.RawListWire[i].PerSec)
		}
		fmt.Fprintf(tw, "Cluster.list (%d clusters), %d callers\t%s\t%s\t%s\t%s\t%s\t\n", r.Clusters, o.Callers, rate(p), rate(o),
			limit, ratio(o.PerSec, p.PerSec), ofLimit)
	}
	fmt.Fprintf(tw, "Cluster.list result size (bytes)\t%d\t%d\t-\t%s\t-\t\n", r.Python.ListBytes, r.Ours.ListBytes,
		ratio(float64(r.Ours.ListBytes), float64(r.Python.ListBytes)))
	pc, oc := r.Python.Create, r.Ours.Create
	fmt.Fprintf(tw, "cluster_create → CREATE_COMPLETE (%d casts)\t%.2f clusters/s (%.1f s)\t%.2f clusters/s (%.1f s)\t-\t%s\t-\t\n",
		r.Creates, pc.PerSec, pc.Seconds, oc.PerSec, oc.Seconds, ratio(oc.PerSec, pc.PerSec))
	fmt.Fprintf(tw, "server CPU per cluster_create (ms)\t%.1f\t%.1f\t-\t%s\t-\t\n",
		perCreateMS(pc), perCreateMS(oc), ratio(perCreateMS(oc), perCreateMS(pc)))
	if ps, os := r.Python.SeededMem, r.Ours.SeededMem; ps.RSS+os.RSS > 0 {
		fmt.Fprintf(tw, "memory 5 s after seeding (MiB)\tRSS %.1f, PSS %.1f (%d procs)\tRSS %.1f, PSS %.1f\t-\t%s of PSS\t-\t\n",
			mib(ps.RSS), mib(ps.PSS), ps.Procs, mib(os.RSS), mib(os.PSS), ratio(float64(os.RSS), float64(ps.PSS)))
	}
	pi, oi := r.Python.IdleMem, r.Ours.IdleMem
	fmt.Fprintf(tw, "%s\tRSS %.1f, PSS %.1f (%d procs)\tRSS %.1f, PSS %.1f\t-\t%s of PSS\t-\t\n",
		idleLabel(r), mib(pi.RSS), mib(pi.PSS), pi.Procs, mib(oi.RSS), mib(oi.PSS), ratio(float64(oi.RSS), float64(pi.PSS)))
	pp, op := r.Python.PeakMem, r.Ours.PeakMem
	fmt.Fprintf(tw, "peak memory during the run (MiB)\tRSS %.1f, PSS %.1f\tRSS %.1f, PSS %.1f\t-\t%s of PSS\t-\t\n",
		mib(pp.RSS), mib(pp.PSS), mib(op.RSS), mib(op.PSS), ratio(float64(op.RSS), float64(pp.PSS)))
	fmt.Fprintf(tw, "CPU seconds, own cells (whole run)\t%.1f (%.1f)\t%.1f (%.1f)\t-\t%s\t-\t\n",
		r.Python.CPUOwn, r.Python.CPURun, r.Ours.CPUOwn, r.Ours.CPURun, ratio(r.Ours.CPUOwn, r.Python.CPUOwn))
	for i, l := range r.Raw {
		fmt.Fprintf(tw, "raw amqp091-go request/reply, %d callers\t-\t-\t%s\t-\t-\t\n", l.Callers, rate(l))
		if i < len(r.RawNoConfirm) {
			n := r.RawNoConfirm[i]
			fmt.Fprintf(tw, "  same without publisher confirms\t-\t-\t%s\t-\t-\t\n", rate(n))
		}
		if i < len(r.RawOsloWire) && i < len(r.Ours.Ping) {
			w := r.RawOsloWire[i]
			fmt.Fprintf(tw, "  same with oslo's wire (bodies, properties)\t-\t-\t%s\t-\t%s\t\n", rate(w),
				ratio(r.Ours.Ping[i].PerSec, w.PerSec))
		}
		if i < len(r.RawListWire) && i < len(r.Ours.List) && i < len(r.Python.List) {
			w := r.RawListWire[i]
			fmt.Fprintf(tw, "  same with a Cluster.list reply (%d bytes)\t-\t-\t%s\tlimit/python %s\t%s\t\n",
				r.ListReplyBytes, rate(w), ratio(w.PerSec, r.Python.List[i].PerSec), ratio(r.Ours.List[i].PerSec, w.PerSec))
		}
		if i < len(r.RawListQuery) && i < len(r.Ours.List) && i < len(r.Python.List) {
			w := r.RawListQuery[i]
			fmt.Fprintf(tw, "  same after the list's query\t-\t-\t%s\tlimit/python %s\t%s\t\n",
				rate(w), ratio(w.PerSec, r.Python.List[i].PerSec), ratio(r.Ours.List[i].PerSec, w.PerSec))
		}
	}
	errs := func(s *sideResult) int {
		n := s.Create.Errors + s.Create.Failed
		for _, x := range append(append([]load.Result{}, s.Ping...), s.List...) {
			n += x.Errors
		}
		return n
	}
	rawErr := 0
	for _, x := range slices.Concat(r.Raw, r.RawNoConfirm, r.RawOsloWire, r.RawListWire, r.RawListQuery) {
		rawErr += x.Errors
	}
	fmt.Fprintf(tw, "errors\t%d\t%d\t%d\t\t\t\n", errs(&r.Python), errs(&r.Ours), rawErr)
	_ = tw.Flush()
	if p := r.Python2026; p != nil {
		b.WriteString(r.table2026(p, errs(p)))
	}
	b.WriteString(r.pairedRounds())
	var firsts []string
	sides := map[string]*sideResult{"python": &r.Python, "ours": &r.Ours}
	if r.Python2026 != nil {
		sides[labelPython2026] = r.Python2026
	}
	for label, s := range sides {
		for _, x := range append(append([]load.Result{}, s.Ping...), s.List...) {
			if x.FirstErr != "" {
				firsts = append(firsts, label+": "+x.FirstErr)
			}
		}
		if s.Create.FirstErr != "" {
			firsts = append(firsts, label+" create: "+s.Create.FirstErr)
		}
	}
	for _, f := range firsts {
		fmt.Fprintf(&b, "first error: %s\n", f)
	}
	return b.String()
}

// table2026 renders the rows of Magnum 23.0.0's conductor (2026.2, what a
// new deployment runs) beside ours, from the same rounds.
func (r *report) table2026(p *sideResult, errors int) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\nMagnum 23.0.0 (2026.2), Debian sid's python3-magnum in the chroot of make services, the same "+
		"run_conductor.py (no trust step exists there; the zero-delay driver is its `simulated` entry point), "+
		"schema at alembic %s, run after ours in every round; Cluster.list is called as magnum-api 2026.2 calls it "+
		"(object_class_action_versions with Cluster 1.24, ClusterTemplate 1.21), of both:\n\n", r.Python2026Schema)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tpython 23.0.0\tours\tours/python 23.0.0\t")
	for i, x := range p.Ping {
		if i < len(r.Ours.Ping) {
			o := r.Ours.Ping[i]
			fmt.Fprintf(tw, "ping_conductor, %d callers\t%s\t%s\t%s\t\n", o.Callers, rate(x), rate(o), ratio(o.PerSec, x.PerSec))
		}
	}
	for i, x := range p.List {
		if i < len(r.OursList2026) {
			o := r.OursList2026[i]
			fmt.Fprintf(tw, "Cluster.list (%d clusters), %d callers\t%s\t%s\t%s\t\n", r.Clusters, o.Callers, rate(x), rate(o),
				ratio(o.PerSec, x.PerSec))
		}
	}
	fmt.Fprintf(tw, "Cluster.list result size (bytes)\t%d\t%d\t%s\t\n", p.ListBytes, r.OursListBytes2026,
		ratio(float64(r.OursListBytes2026), float64(p.ListBytes)))
	pc, oc := p.Create, r.Ours.Create
	fmt.Fprintf(tw, "cluster_create → CREATE_COMPLETE (%d casts)\t%.2f clusters/s (%.1f s)\t%.2f clusters/s (%.1f s)\t%s\t\n",
		r.Creates, pc.PerSec, pc.Seconds, oc.PerSec, oc.Seconds, ratio(oc.PerSec, pc.PerSec))
	fmt.Fprintf(tw, "server CPU per cluster_create (ms)\t%.1f\t%.1f\t%s\t\n",
		perCreateMS(pc), perCreateMS(oc), ratio(perCreateMS(oc), perCreateMS(pc)))
	pi, oi := p.IdleMem, r.Ours.IdleMem
	fmt.Fprintf(tw, "%s\tRSS %.1f, PSS %.1f (%d procs)\tRSS %.1f, PSS %.1f\t%s of PSS\t\n",
		idleLabel(r), mib(pi.RSS), mib(pi.PSS), pi.Procs, mib(oi.RSS), mib(oi.PSS), ratio(float64(oi.RSS), float64(pi.PSS)))
	pp, op := p.PeakMem, r.Ours.PeakMem
	fmt.Fprintf(tw, "peak memory during the run (MiB)\tRSS %.1f, PSS %.1f\tRSS %.1f, PSS %.1f\t%s of PSS\t\n",
		mib(pp.RSS), mib(pp.PSS), mib(op.RSS), mib(op.PSS), ratio(float64(op.RSS), float64(pp.PSS)))
	fmt.Fprintf(tw, "CPU seconds, own cells (whole run)\t%.1f (%.1f)\t%.1f (%.1f)\t%s\t\n",
		p.CPUOwn, p.CPURun, r.Ours.CPUOwn, r.Ours.CPURun, ratio(r.Ours.CPUOwn, p.CPUOwn))
	fmt.Fprintf(tw, "errors\t%d\t\t\t\n", errors)
	_ = tw.Flush()
	return b.String()
}

// write stores bench.json, bench.svg and bench.txt under dir.
func (r *report) write(dir, table string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.txt"), []byte(table), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "bench.svg"), []byte(r.svg()), 0o644)
}

type series struct {
	name  string
	color string
	dash  bool
	pts   []load.Result
}

// svg draws calls/s against callers (log scale) for ping_conductor and
// Cluster.list, Python, ours and the raw limit.
func (r *report) svg() string {
	const w, h = 920, 500
	panels := []struct {
		title string
		ss    []series
	}{
		{"ping_conductor round trips/s", []series{
			{"raw amqp091-go (confirms)", "#888888", true, r.Raw},
			{"ours", "#1f77b4", false, r.Ours.Ping},
			{"python 15.0.1", "#d62728", false, r.Python.Ping},
		}},
		{fmt.Sprintf("Cluster.list (%d clusters) calls/s", r.Clusters), []series{
			{"raw amqp091-go, a list reply (no database, no JSON)", "#888888", true, r.RawListWire},
			{"raw amqp091-go, the list's query and a list reply", "#2ca02c", true, r.RawListQuery},
			{"ours", "#1f77b4", false, r.Ours.List},
			{"python 15.0.1", "#d62728", false, r.Python.List},
		}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="20" text-anchor="middle" font-size="14">magnum-conductor: ours vs Python 15.0.1 (throughput against callers, %s)</text>`+"\n", w/2, esc(r.Date))
	for pi, p := range panels {
		x0 := 70 + pi*(w/2)
		y0, pw, ph := 50, w/2-110, h-130
		// y: log10 from the decade below the smallest to the one above the largest.
		lo, hi := math.Inf(1), 0.0
		for _, s := range p.ss {
			for _, x := range s.pts {
				if x.PerSec > 0 {
					lo = math.Min(lo, x.PerSec)
					hi = math.Max(hi, x.PerSec)
				}
			}
		}
		if hi == 0 {
			lo, hi = 1, 10
		}
		dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if dhi == dlo {
			dhi++
		}
		ymap := func(v float64) float64 {
			return float64(y0+ph) - (math.Log10(v)-dlo)/(dhi-dlo)*float64(ph)
		}
		callers := []int{}
		for _, x := range p.ss[0].pts {
			callers = append(callers, x.Callers)
		}
		cmax := 16.0
		if len(callers) > 0 {
			cmax = math.Max(2, float64(callers[len(callers)-1]))
		}
		xmap := func(c int) float64 {
			return float64(x0) + math.Log2(float64(c))/math.Log2(cmax)*float64(pw)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="13">%s</text>`+"\n", x0+pw/2, y0-12, esc(p.title))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", x0, y0, pw, ph)
		for d := dlo; d <= dhi; d++ {
			y := ymap(math.Pow(10, d))
			fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, x0+pw, y, y)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-5, y+4, humanize(math.Pow(10, d)))
		}
		for _, c := range callers {
			x := xmap(c)
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/>`+"\n", x, x, y0, y0+ph)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x, y0+ph+16, c)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">callers (log scale); calls/s on a log scale</text>`+"\n", x0+pw/2, y0+ph+34)
		for si, s := range p.ss {
			var pts []string
			for _, x := range s.pts {
				if x.PerSec > 0 {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", xmap(x.Callers), ymap(x.PerSec)))
				}
			}
			dash := ""
			if s.dash {
				dash = ` stroke-dasharray="6,4"`
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
			for _, x := range s.pts {
				if x.PerSec > 0 {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", xmap(x.Callers), ymap(x.PerSec), s.color)
					fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%.0f</text>`+"\n", xmap(x.Callers)+6, ymap(x.PerSec)-6, s.color, x.PerSec)
				}
			}
			ly := y0 + ph + 52 + si*16
			fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`, x0, x0+24, ly-4, ly-4, s.color, dash)
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x0+30, ly, esc(s.name))
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func humanize(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

func esc(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}

// perCreateMS is the server's CPU time per completed create, in ms.
func perCreateMS(c createResult) float64 {
	if c.Completed == 0 {
		return 0
	}
	return c.CPUSeconds * 1000 / float64(c.Completed)
}

// pairedRounds reports the ratios round by round: a round runs the limit,
// Python and ours back to back, so its figures share the machine's
// condition of the moment, which the medians of each side above do not.
func (r *report) pairedRounds() string {
	var b strings.Builder
	b.WriteString("\nRound by round (each round runs the limit, Python and ours back to back):\n")
	for i := range r.Ours.Ping {
		if i < len(r.Raw) {
			rs := roundRatios(r.Ours.Ping[i].Rounds, r.Raw[i].Rounds)
			fmt.Fprintf(&b, "  ping_conductor, %d callers, ours/limit: %s\n", r.Ours.Ping[i].Callers, formatRatios(rs))
		}
	}
	for i := range r.Ours.List {
		if i < len(r.Python.List) {
			rs := roundRatios(r.Ours.List[i].Rounds, r.Python.List[i].Rounds)
			fmt.Fprintf(&b, "  Cluster.list, %d callers, ours/python: %s\n", r.Ours.List[i].Callers, formatRatios(rs))
			if i < len(r.RawListWire) {
				rs := roundRatios(r.RawListWire[i].Rounds, r.Python.List[i].Rounds)
				fmt.Fprintf(&b, "  Cluster.list, %d callers, limit/python (the most any server could reach): %s\n",
					r.Ours.List[i].Callers, formatRatios(rs))
			}
			if i < len(r.RawListQuery) {
				rs := roundRatios(r.RawListQuery[i].Rounds, r.Python.List[i].Rounds)
				fmt.Fprintf(&b, "  Cluster.list, %d callers, limit after the query/python (the most a server reading "+
					"MariaDB could reach): %s\n", r.Ours.List[i].Callers, formatRatios(rs))
			}
		}
	}
	return b.String()
}

// roundRatios divides a by b round by round (rounds missing on either side
// are left out).
func roundRatios(a, b []float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

// formatRatios lists ratios as ratio() writes them, with their median.
func formatRatios(rs []float64) string {
	if len(rs) == 0 {
		return "-"
	}
	parts := make([]string, len(rs))
	for i, x := range rs {
		parts[i] = ratio(x, 1)
	}
	sorted := slices.Sorted(slices.Values(rs))
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	return strings.Join(parts, ", ") + " (median " + ratio(med, 1) + ")"
}

// renderTable prints the table of the bench.json in file.
func renderTable(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	fmt.Print(r.table())
	return nil
}
