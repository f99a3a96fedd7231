package exepages

import (
	"errors"
	"fmt"
	"syscall"
)

const supported = true

// madvPageout is MADV_PAGEOUT (include/uapi/asm-generic/mman-common.h).
const madvPageout = 21

func pageOut(start, length uintptr) error {
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, length, madvPageout)
	switch {
	case errno == 0:
		return nil
	case errors.Is(errno, syscall.EINVAL):
		return ErrUnsupported
	default:
		return fmt.Errorf("exepages: madvise %#x+%#x: %w", start, length, errno)
	}
}
