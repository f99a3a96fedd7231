package conductor

import "context"

// PingConductor ports conductor_listener.Handler.ping_conductor: a
// liveness probe that answers true.
func (h *Handlers) PingConductor(ctx context.Context) bool {
	return true
}
