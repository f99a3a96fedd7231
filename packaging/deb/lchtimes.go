package deb

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// lchtimes sets a path's access and modification times without following a
// symlink.
func lchtimes(path string, t time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("deb: times of %s: %w", path, err)
	}
	return nil
}
