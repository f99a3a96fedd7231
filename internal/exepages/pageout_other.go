//go:build !linux

package exepages

const supported = false

func pageOut(start, length uintptr) error { return ErrUnsupported }
