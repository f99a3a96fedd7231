package pyrepr

import (
	"math"
	"testing"
)

// TestFloat: the values are Python 3's repr() of each float.
func TestFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{1.5, "1.5"}, {3, "3.0"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {0.0001, "0.0001"},
		{0.00001, "1e-05"}, {-2.25, "-2.25"}, {0.1, "0.1"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"},
		{1.2345678901234566e-7, "1.2345678901234566e-07"}, {123456789012345678, "1.2345678901234568e+17"},
		{math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.NaN(), "nan"},
	} {
		if got := Float(tc.f); got != tc.want {
			t.Errorf("Float(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}
