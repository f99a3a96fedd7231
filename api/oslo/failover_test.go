package oslo

import (
	"testing"
)

// TestFailoverStrategies: round-robin (kombu's default) dials the brokers
// in turn from a random start; shuffle draws one at random for each dial.
func TestFailoverStrategies(t *testing.T) {
	u, err := ParseTransportURL("rabbit://u:p@a:5672,u:p@b:5672,u:p@c:5672/")
	if err != nil {
		t.Fatal(err)
	}
	d := newDialer(u, RabbitOptions{}, "test", nil)
	first := d.nextHost().Hostname
	order := map[string]string{"a": "b", "b": "c", "c": "a"}
	prev := first
	for range 6 {
		h := d.nextHost().Hostname
		if h != order[prev] {
			t.Fatalf("round-robin went from %s to %s", prev, h)
		}
		prev = h
	}

	d = newDialer(u, RabbitOptions{FailoverShuffle: true}, "test", nil)
	seen := map[string]int{}
	inTurn := 0
	prev = d.nextHost().Hostname
	for range 300 {
		h := d.nextHost().Hostname
		seen[h]++
		if h == order[prev] {
			inTurn++
		}
		prev = h
	}
	if len(seen) != 3 || inTurn > 200 {
		t.Fatalf("shuffle drew %v, %d of 300 in round-robin order", seen, inTurn)
	}
}
