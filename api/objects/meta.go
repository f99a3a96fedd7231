// Package objects holds Magnum's versioned objects (oslo.versionedobjects) as
// Go types, and their primitive codec.
package objects

// Meta is embedded in every object. It records which fields are set and
// which changed since the object was loaded or last saved, as
// oslo.versionedobjects does with obj_what_changed. Handlers assign fields
// directly; Changes finds what differs from the snapshot taken at the last
// ResetChanges (or decode), plus the changes a peer declared on the wire.
type Meta struct {
	// base holds each set field's primitive at the last reset; a field
	// absent from base was not set then.
	base map[string]any
	// declared holds changes named by a received primitive's
	// "magnum_object.changes" that have not been reset since.
	declared map[string]bool
	// version is the version the object was received at ("" when built
	// locally).
	version string
}

func (m *Meta) meta() *Meta { return m }

// ReceivedVersion returns the object version a peer sent, or "" for an object
// built locally.
func (m *Meta) ReceivedVersion() string { return m.version }
