package periodic

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// ClientCredentials returns the PEM of a cluster's CA and of the Magnum
// client certificate and its (decrypted) key. certmanager.Manager
// implements it.
type ClientCredentials interface {
	ClientCredentials(ctx context.Context, c *objects.Cluster) (caPEM, certPEM, keyPEM []byte, err error)
}

// KubernetesMonitorOptions configure the Kubernetes health monitor.
type KubernetesMonitorOptions struct {
	// ConnectTimeout bounds the TCP connect and the TLS handshake of each
	// request (default 5 s).
	ConnectTimeout time.Duration
	// RequestTimeout bounds each request from dial to the last byte of
	// the body (default 10 s). Magnum has none (§K.3).
	RequestTimeout time.Duration
}

// KubernetesMonitors builds the Kubernetes monitor of
// magnum/drivers/common/k8s_monitor.py for drivers without their own. TLS
// material is cached per cluster and per certificate reference, so a CA
// rotation (new refs) is picked up at once and the certificate store is
// read once per cluster, not once per poll.
type KubernetesMonitors struct {
	creds ClientCredentials
	opts  KubernetesMonitorOptions

	mu    sync.Mutex
	cache map[string]tlsEntry // cluster uuid →
}

type tlsEntry struct {
	refs string
	cfg  *tls.Config
}

// NewKubernetesMonitors returns a monitor factory reading the client
// certificates from creds.
func NewKubernetesMonitors(creds ClientCredentials, o KubernetesMonitorOptions) *KubernetesMonitors {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	return &KubernetesMonitors{creds: creds, opts: o, cache: map[string]tlsEntry{}}
}

// Monitor returns the Kubernetes monitor of c.
func (k *KubernetesMonitors) Monitor(_ context.Context, c *objects.Cluster) (drivers.Monitor, error) {
	return &k8sMonitor{factory: k, cluster: c}, nil
}

// Forget drops cached TLS material of clusters not in keep.
func (k *KubernetesMonitors) Forget(keep map[string]bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for uuid := range k.cache {
		if !keep[uuid] {
			delete(k.cache, uuid)
		}
	}
}

func (k *KubernetesMonitors) tlsConfig(ctx context.Context, c *objects.Cluster) (*tls.Config, error) {
	uuid := objects.Deref(c.UUID)
	refs := objects.Deref(c.CACertRef) + "|" + objects.Deref(c.MagnumCertRef)
	k.mu.Lock()
	e, ok := k.cache[uuid]
	k.mu.Unlock()
	if ok && e.refs == refs {
		return e.cfg, nil
	}
	if k.creds == nil {
		return nil, errors.New("no client credentials source configured")
	}
	caPEM, certPEM, keyPEM, err := k.creds.ClientCredentials(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("reading client certificates: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the cluster CA certificate is not valid PEM")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the client certificate: %w", err)
	}
	// A session cache per cluster lets the next polls resume TLS instead
	// of a full handshake with certificate verification.
	cfg := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		ClientSessionCache: tls.NewLRUClientSessionCache(1)}
	k.mu.Lock()
	k.cache[uuid] = tlsEntry{refs: refs, cfg: cfg}
	k.mu.Unlock()
	return cfg, nil
}

type k8sMonitor struct {
	factory *KubernetesMonitors
	cluster *objects.Cluster
}

// boolFromString is oslo_utils.strutils.bool_from_string (non-strict).
func boolFromString(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "t", "true", "on", "y", "yes":
		return true
	}
	return false
}

// autoHealerRunning is K8sMonitor._is_magnum_auto_healer_running.
func autoHealerRunning(c *objects.Cluster) bool {
	return boolFromString(c.Labels["auto_healing_enabled"]) &&
		c.Labels["auto_healing_controller"] == "magnum-auto-healer"
}

// accessible is K8sMonitor._is_cluster_accessible.
func accessible(c *objects.Cluster) bool {
	if c.MasterLBEnabled {
		if v, ok := c.Labels["master_lb_floating_ip_enabled"]; ok {
			return boolFromString(v)
		}
		return c.FloatingIPEnabled
	}
	return c.FloatingIPEnabled
}

// errNoAnswer marks a poll that got no HTTP answer at all (connect, TLS,
// timeout): the health job stores UNKNOWN for it.
type errNoAnswer struct{ err error }

func (e errNoAnswer) Error() string { return e.err.Error() }
func (e errNoAnswer) Unwrap() error { return e.err }

// httpStatusError is a non-2xx answer; its body plays the role of
// ApiException.body in Magnum's reason.
type httpStatusError struct {
	status string
	body   string
}

func (e *httpStatusError) Error() string { return "kubernetes API answered " + e.status }

// PollHealth is K8sMonitor.poll_health_status (§G.2), with timeouts. It
// returns an error when the cluster's API cannot be reached at all.
func (m *k8sMonitor) PollHealth(ctx context.Context) (drivers.Health, error) {
	c := m.cluster
	if autoHealerRunning(c) {
		return drivers.Health{}, nil
	}
	if !accessible(c) {
		return drivers.Health{Status: objects.Unknown, Reason: map[string]string{
			"api": fmt.Sprintf("The cluster %s is not accessible.", objects.Deref(c.Name))}}, nil
	}
	base := strings.TrimRight(objects.Deref(c.APIAddress), "/")
	if base == "" {
		return drivers.Health{}, errors.New("the cluster has no api_address")
	}
	cfg, err := m.factory.tlsConfig(ctx, c)
	if err != nil {
		return drivers.Health{}, err
	}
	o := m.factory.opts
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: o.ConnectTimeout}).DialContext,
		TLSHandshakeTimeout:   o.ConnectTimeout,
		TLSClientConfig:       cfg,
		ResponseHeaderTimeout: o.RequestTimeout,
		MaxIdleConnsPerHost:   1,
		ForceAttemptHTTP2:     false,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: o.RequestTimeout}

	status := objects.Unhealthy
	reason := map[string]string{}
	healthz, err := get(ctx, client, base+"/healthz", 64<<10)
	if err != nil {
		var se *httpStatusError
		if errors.As(err, &se) {
			// Magnum: reason["api"] = exc.body when the API answered.
			if se.body != "" {
				reason["api"] = se.body
			} else {
				reason["api"] = se.status
			}
			return drivers.Health{Status: status, Reason: reason}, nil
		}
		return drivers.Health{}, errNoAnswer{err}
	}
	body, err := get(ctx, client, base+"/api/v1/nodes", 32<<20)
	if err != nil {
		// After healthz returned: partial reason, no "api", UNHEALTHY.
		return drivers.Health{Status: status, Reason: reason}, nil
	}
	var nodes struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Status struct {
				Conditions []struct {
					Type   string `json:"type"`
					Status string `json:"status"`
				} `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &nodes); err != nil {
		return drivers.Health{Status: status, Reason: reason}, nil
	}
	allReady := true
	for _, n := range nodes.Items {
		ready := false
		for _, cond := range n.Status.Conditions {
			if cond.Type == "Ready" {
				ready = boolFromString(cond.Status)
				break
			}
		}
		allReady = allReady && ready
		if ready {
			reason[n.Metadata.Name+".Ready"] = "True"
		} else {
			reason[n.Metadata.Name+".Ready"] = "False"
		}
	}
	hz := string(healthz)
	if hz == "ok" && allReady {
		status = objects.Healthy
	}
	reason["api"] = hz
	return drivers.Health{Status: status, Reason: reason}, nil
}

func get(ctx context.Context, client *http.Client, url string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		return nil, &httpStatusError{status: resp.Status, body: string(body)}
	}
	return body, nil
}
