package capi

import (
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// TestPhaseOfTheStatusUpdateClusterStatusSet: the temporary adapter reads
// the status the driver's own mapping set as a phase.
func TestPhaseOfTheStatusUpdateClusterStatusSet(t *testing.T) {
	for _, tc := range []struct {
		before, after string
		want          drivers.Phase
	}{
		{objects.CreateInProgress, objects.CreateInProgress, drivers.PhaseInProgress},
		{objects.CreateInProgress, objects.CreateComplete, drivers.PhaseReady},
		{objects.CreateInProgress, objects.CreateFailed, drivers.PhaseFailed},
		{objects.UpdateInProgress, objects.UpdateFailed, drivers.PhaseFailed},
		{objects.DeleteInProgress, objects.DeleteComplete, drivers.PhaseGone},
		{objects.DeleteInProgress, objects.DeleteFailed, drivers.PhaseFailed},
		// A nodegroup that had failed before the operation: left alone.
		{objects.UpdateFailed, objects.UpdateFailed, drivers.PhaseReady},
		{objects.CreateComplete, objects.CreateComplete, drivers.PhaseReady},
	} {
		if got := phaseOf(tc.before, tc.after); got != tc.want {
			t.Errorf("%s → %s: %s, want %s", tc.before, tc.after, got, tc.want)
		}
	}
}
