package addonstest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// Registry is a minimal OCI distribution server (the read side of the
// distribution spec: manifests by tag or digest, blobs by digest) over
// TLS, holding Helm charts as `helm push` stores them: a manifest whose
// config is the chart's metadata and whose one layer is the archive.
type Registry struct {
	Server *httptest.Server
	mu     sync.Mutex
	blobs  map[string][]byte            // by digest
	tags   map[string]map[string]string // repository → tag → manifest digest
	// tampered blobs are served with their last byte changed.
	tampered map[string]bool
	Blobs    atomic.Int32 // requests for blobs
	// Hold, when set before the first request, is called with each blob
	// request before it is served (a slow registry).
	Hold func(*http.Request)
}

// NewRegistry starts a registry; its Server.Client() trusts it.
func NewRegistry(t *testing.T) *Registry {
	t.Helper()
	r := &Registry{blobs: map[string][]byte{}, tags: map[string]map[string]string{}, tampered: map[string]bool{}}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Server.Close)
	return r
}

// Host is the registry's host:port (oci://<Host>/<path> names a repository).
func (r *Registry) Host() string { return strings.TrimPrefix(r.Server.URL, "https://") }

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Push stores ch, packaged with the Helm SDK, as <path>/<chart name> with
// its version as the tag, and returns its archive's digest.
func (r *Registry) Push(t *testing.T, path string, ch *chart.Chart) string {
	t.Helper()
	p, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	archive, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	config, _ := json.Marshal(ch.Metadata)
	desc := func(mediaType string, b []byte) map[string]any {
		return map[string]any{"mediaType": mediaType, "digest": digestOf(b), "size": len(b)}
	}
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": desc("application/vnd.cncf.helm.config.v1+json", config),
		"layers": []any{desc("application/vnd.cncf.helm.chart.content.v1.tar+gzip", archive)},
	})
	repo := strings.Trim(path, "/") + "/" + ch.Metadata.Name
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range [][]byte{config, archive, manifest} {
		r.blobs[digestOf(b)] = b
	}
	if r.tags[repo] == nil {
		r.tags[repo] = map[string]string{}
	}
	r.tags[repo][strings.ReplaceAll(ch.Metadata.Version, "+", "_")] = digestOf(manifest)
	return digestOf(archive)
}

// Tamper makes the registry serve the blob digest with altered content.
func (r *Registry) Tamper(digest string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tampered[digest] = true
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "read-only", http.StatusMethodNotAllowed)
		return
	}
	p := strings.TrimPrefix(req.URL.Path, "/v2/")
	if p == "" || p == req.URL.Path {
		w.WriteHeader(http.StatusOK) // the API version check
		return
	}
	if r.Hold != nil && strings.Contains(p, "/blobs/") {
		r.Hold(req)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var b []byte
	var mediaType, digest string
	switch {
	case strings.Contains(p, "/manifests/"):
		repo, ref, _ := strings.Cut(p, "/manifests/")
		digest = ref
		if !strings.HasPrefix(ref, "sha256:") {
			digest = r.tags[repo][ref]
		}
		b, mediaType = r.blobs[digest], "application/vnd.oci.image.manifest.v1+json"
	case strings.Contains(p, "/blobs/"):
		_, digest, _ = strings.Cut(p, "/blobs/")
		b, mediaType = r.blobs[digest], "application/octet-stream"
		r.Blobs.Add(1)
		if b != nil && r.tampered[digest] {
			b = bytes.Clone(b)
			b[len(b)-1] ^= 0xff
		}
	}
	if b == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"not found"}]}`))
		return
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("Docker-Content-Digest", digest)
	if req.Method == http.MethodGet {
		_, _ = w.Write(b)
	}
}
