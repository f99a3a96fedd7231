package exepages

import (
	"strings"
	"testing"
)

func TestReadOnlyMappings(t *testing.T) {
	const maps = `00400000-01266000 r-xp 00000000 fe:00 9986693                            /opt/magnum/bin/magnum-conductor
01266000-0214a000 r--p 00e66000 fe:00 9986693                            /opt/magnum/bin/magnum-conductor
0214a000-021f4000 rw-p 01d4a000 fe:00 9986693                            /opt/magnum/bin/magnum-conductor
021f4000-04248000 rw-p 00000000 00:00 0 
7f02c60b8000-7f02c620e000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
7f02c6300000-7f02c6400000 r--p 00000000 fe:00 11                         /opt/magnum/bin/magnum-conductor-old
7f02c6500000-7f02c6600000 r--p 00000000 fe:00 12                         /opt/my dir/conductor (deleted)
7ffd7394b000-7ffd7394c000 --xp 00000000 00:00 0                          [vsyscall]
`
	got, err := ReadOnlyMappings(strings.NewReader(maps), "/opt/magnum/bin/magnum-conductor")
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{{0x400000, 0x1266000, "r-xp"}, {0x1266000, 0x214a000, "r--p"}}
	if len(got) != len(want) {
		t.Fatalf("mappings = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got[0].Len() != 0xe66000 {
		t.Errorf("Len = %#x", got[0].Len())
	}

	// A path with a space, replaced on disk since it started: the maps list
	// it with " (deleted)", which os.Executable trims.
	got, err = ReadOnlyMappings(strings.NewReader(maps), "/opt/my dir/conductor")
	if err != nil || len(got) != 1 || got[0].Start != 0x7f02c6500000 {
		t.Errorf("deleted executable: %+v, %v", got, err)
	}

	if _, err := ReadOnlyMappings(strings.NewReader("zz-01 r-xp 0 0:0 1 /x\n"), "/x"); err == nil {
		t.Error("a bad address range was accepted")
	}
}
