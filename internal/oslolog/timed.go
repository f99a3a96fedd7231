package oslolog

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// timedRotation is Python's TimedRotatingFileHandler as oslo.log sets it up
// for log_rotation_type = interval: log_rotate_interval_type seconds,
// minutes, hours, days, weekday or midnight (any case), log_rotate_interval
// units (for weekday, also the day: 0 is Monday, as oslo.log passes it as
// both), max_logfile_count backups, local time. At the first write at or
// past the rollover time, the file becomes <path>.<start of its period> (in
// the unit's strftime suffix) and a new file starts; the oldest backups past
// the count are deleted (none are with a count of 0, as in Python).
type timedRotation struct {
	when      string        // S, M, H, D, MIDNIGHT, W0 ... W6
	interval  time.Duration // unit × log_rotate_interval, as Python computes it (0 for W0)
	step      time.Duration // what the next rollover moves by: interval, or a unit when that is 0
	dayOfWeek time.Weekday
	suffix    string // strftime
	match     *regexp.Regexp
	backups   int
	now       func() time.Time
	at        time.Time // the next rollover
}

var (
	matchSeconds = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}(\.\w+)?$`)
	matchMinutes = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}_\d{2}-\d{2}(\.\w+)?$`)
	matchHours   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}_\d{2}(\.\w+)?$`)
	matchDays    = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(\.\w+)?$`)
)

// newTimedRotation reads oslo.log's options. since is the file's
// modification time (or now, for a new file), from which the first rollover
// is counted, as in Python.
func newTimedRotation(intervalType string, interval, backups int, since time.Time, now func() time.Time) (*timedRotation, error) {
	r := &timedRotation{backups: backups, now: now}
	var unit time.Duration
	switch strings.ToLower(intervalType) {
	case "seconds":
		r.when, unit, r.suffix, r.match = "S", time.Second, "%Y-%m-%d_%H-%M-%S", matchSeconds
	case "minutes":
		r.when, unit, r.suffix, r.match = "M", time.Minute, "%Y-%m-%d_%H-%M", matchMinutes
	case "hours":
		r.when, unit, r.suffix, r.match = "H", time.Hour, "%Y-%m-%d_%H", matchHours
	case "days", "":
		r.when, unit, r.suffix, r.match = "D", 24*time.Hour, "%Y-%m-%d", matchDays
	case "midnight":
		r.when, unit, r.suffix, r.match = "MIDNIGHT", 24*time.Hour, "%Y-%m-%d", matchDays
	case "weekday":
		if interval < 0 || interval > 6 {
			return nil, fmt.Errorf("log_rotate_interval_type = weekday needs log_rotate_interval 0 (Monday) to 6, not %d", interval)
		}
		r.when, unit, r.suffix, r.match = fmt.Sprintf("W%d", interval), 7*24*time.Hour, "%Y-%m-%d", matchDays
		r.dayOfWeek = time.Weekday((interval + 1) % 7) // Python's Monday is 0
	default:
		return nil, fmt.Errorf("log_rotate_interval_type: Valid values are [Seconds, Minutes, Hours, Days, Weekday, Midnight], but found %q", intervalType)
	}
	r.interval = unit * time.Duration(interval)
	if r.interval <= 0 && r.when != "MIDNIGHT" && !strings.HasPrefix(r.when, "W") {
		// Python would roll over at every write, then loop forever.
		return nil, fmt.Errorf("log_rotate_interval must be positive, not %d", interval)
	}
	r.step = r.interval
	if r.step <= 0 {
		r.step = unit
	}
	r.at = r.next(since.Truncate(time.Second))
	return r, nil
}

// next is computeRollover: interval after t, or for midnight and weekday
// the next local midnight (on the right weekday).
func (r *timedRotation) next(t time.Time) time.Time {
	if r.when != "MIDNIGHT" && !strings.HasPrefix(r.when, "W") {
		return t.Add(r.interval)
	}
	lt := t.Local()
	midnight := time.Date(lt.Year(), lt.Month(), lt.Day()+1, 0, 0, 0, 0, time.Local)
	if strings.HasPrefix(r.when, "W") {
		day := midnight.Add(-time.Nanosecond).Weekday() // the day the wait starts on
		if day != r.dayOfWeek {
			wait := (int(r.dayOfWeek) - int(day) + 7) % 7
			midnight = midnight.AddDate(0, 0, wait)
		}
	}
	return midnight
}

// due reports whether a write now must roll the file over first.
func (r *timedRotation) due() bool { return !r.now().Before(r.at) }

// rollover renames path to its dated name, deletes the surplus backups and
// sets the next rollover time (doRollover).
func (r *timedRotation) rollover(path string) error {
	now := r.now()
	start := r.at.Add(-r.interval).Local()
	dated := path + "." + string(appendStrftime(nil, r.suffix, start))
	_ = os.Remove(dated)
	if err := os.Rename(path, dated); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("log file rotation: %w", err)
	}
	if r.backups > 0 {
		r.deleteSurplus(path)
	}
	at := r.next(now.Truncate(time.Second))
	for !at.After(now) {
		at = at.Add(r.step)
	}
	r.at = at
	return nil
}

// deleteSurplus keeps the newest backups dated files (getFilesToDelete).
func (r *timedRotation) deleteSurplus(path string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var dated []string
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Name(), base+"."); ok && r.match.MatchString(rest) {
			dated = append(dated, filepath.Join(dir, e.Name()))
		}
	}
	if len(dated) <= r.backups {
		return
	}
	sort.Strings(dated)
	for _, p := range dated[:len(dated)-r.backups] {
		_ = os.Remove(p)
	}
}
