// Package addons renders the add-ons of a workload cluster (CNI, OpenStack
// cloud controller manager, CSI plugins, metrics-server, an operator's
// own) into plain manifests: Helm charts fetched from configurable
// repositories and rendered with the Helm SDK's template engine, no Helm
// release, no call into the workload cluster. The driver delivers the
// manifests with Cluster API ClusterResourceSets.
package addons

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"
)

// ChartRef names a chart in a Helm repository.
type ChartRef struct {
	// Repo is the repository's base URL (its index is Repo/index.yaml),
	// or an OCI registry's oci://host[:port]/path, under which the chart
	// is the repository <path>/<chart> with the tag <version>.
	Repo    string `json:"repo"`
	Chart   string `json:"chart"`
	Version string `json:"version"`
}

func (r ChartRef) String() string { return r.Repo + " " + r.Chart + "@" + r.Version }

// maxChartBytes bounds a downloaded chart archive or index.
const maxChartBytes = 64 << 20

// Charts fetches charts from HTTP(S) Helm repositories and OCI registries
// and keeps them on disk by repository, name and version: a chart is
// downloaded once, its SHA-256 checked against the repository index (the
// manifest's layer digest in a registry), and every later use reads the
// file (once: archives are kept in memory). Safe for concurrent use.
type Charts struct {
	dir    string
	client *http.Client

	mu sync.Mutex
	// archives holds the archives read so far. Get loads a new chart from
	// them every time: rendering prunes a chart's disabled dependencies in
	// place, so a loaded chart is never shared.
	archives map[string][]byte
	// fetches counts downloads of archives (tests read it).
	fetches int
}

// NewCharts returns a chart cache in dir (created when missing); client
// nil means one whose requests time out after two minutes.
func NewCharts(dir string, client *http.Client) *Charts {
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Minute}
	}
	return &Charts{dir: dir, client: client, archives: map[string][]byte{}}
}

// Fetches is how many chart archives were downloaded.
func (c *Charts) Fetches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches
}

// path is where ref's archive is kept: one folder per repository (the
// hash of its URL), <chart>-<version>.tgz in it.
func (c *Charts) path(ref ChartRef) string {
	h := sha256.Sum256([]byte(strings.TrimSuffix(ref.Repo, "/")))
	return filepath.Join(c.dir, hex.EncodeToString(h[:8]), ref.Chart+"-"+ref.Version+".tgz")
}

// Get returns a newly loaded copy of the chart ref names, from memory, the
// disk, or the repository.
func (c *Charts) Get(ctx context.Context, ref ChartRef) (*chart.Chart, error) {
	if ref.Repo == "" || ref.Chart == "" || ref.Version == "" {
		return nil, fmt.Errorf("addons: chart %q: repository, name and version are required", ref.Chart)
	}
	if strings.ContainsAny(ref.Chart+ref.Version, "/\\") || strings.Contains(ref.Chart+ref.Version, "..") {
		return nil, fmt.Errorf("addons: chart %q version %q: bad name", ref.Chart, ref.Version)
	}
	p := c.path(ref)
	c.mu.Lock()
	archive, ok := c.archives[p]
	c.mu.Unlock()
	if !ok {
		if _, err := os.Stat(p); err != nil {
			if err := c.download(ctx, ref, p); err != nil {
				return nil, err
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("addons: chart cache: %w", err)
		}
		archive = b
	}
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("addons: load chart %s: %w", ref, err)
	}
	if ch.Metadata.Name != ref.Chart || ch.Metadata.Version != strings.TrimPrefix(ref.Version, "v") && ch.Metadata.Version != ref.Version {
		return nil, fmt.Errorf("addons: chart %s: the archive holds %s@%s", ref, ch.Metadata.Name, ch.Metadata.Version)
	}
	if !ok {
		c.mu.Lock()
		c.archives[p] = archive
		c.mu.Unlock()
	}
	return ch, nil
}

// indexFile is the part of a Helm repository's index.yaml used here.
type indexFile struct {
	Entries map[string][]struct {
		Version string   `json:"version"`
		URLs    []string `json:"urls"`
		Digest  string   `json:"digest"`
	} `json:"entries"`
}

func (c *Charts) download(ctx context.Context, ref ChartRef, dest string) error {
	if strings.HasPrefix(ref.Repo, ociScheme) {
		return c.downloadOCI(ctx, ref, dest)
	}
	base, err := url.Parse(strings.TrimSuffix(ref.Repo, "/") + "/")
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return fmt.Errorf("addons: chart repository %q: only http(s) repositories are supported", ref.Repo)
	}
	raw, err := c.get(ctx, base.JoinPath("index.yaml").String())
	if err != nil {
		return fmt.Errorf("addons: index of %s: %w", ref.Repo, err)
	}
	var idx indexFile
	if err := yaml.Unmarshal(raw, &idx); err != nil {
		return fmt.Errorf("addons: index of %s: %w", ref.Repo, err)
	}
	var chartURL, digest string
	for _, e := range idx.Entries[ref.Chart] {
		if (e.Version == ref.Version || e.Version == strings.TrimPrefix(ref.Version, "v")) && len(e.URLs) > 0 {
			chartURL, digest = e.URLs[0], e.Digest
			break
		}
	}
	if chartURL == "" {
		return fmt.Errorf("addons: chart %s is not in the repository's index", ref)
	}
	u, err := base.Parse(chartURL) // relative URLs are relative to the repository
	if err != nil {
		return fmt.Errorf("addons: chart %s: url %q: %w", ref, chartURL, err)
	}
	archive, err := c.get(ctx, u.String())
	if err != nil {
		return fmt.Errorf("addons: download chart %s: %w", ref, err)
	}
	sum := sha256.Sum256(archive)
	if digest == "" {
		return fmt.Errorf("addons: chart %s: the index gives no digest", ref)
	}
	if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, digest) {
		return fmt.Errorf("addons: chart %s: digest %s does not match the index's %s", ref, got, digest)
	}
	return c.store(archive, dest)
}

// store keeps a downloaded archive, whose digest was checked, at dest.
func (c *Charts) store(archive []byte, dest string) error {
	c.mu.Lock()
	c.fetches++
	c.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(dest), 0o750); err != nil {
		return fmt.Errorf("addons: chart cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".download-*")
	if err != nil {
		return fmt.Errorf("addons: chart cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(archive); err != nil {
		_ = tmp.Close() // the write's error is the one to report
		return fmt.Errorf("addons: chart cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("addons: chart cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("addons: chart cache: %w", err)
	}
	return nil
}

func (c *Charts) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxChartBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxChartBytes {
		return nil, errors.New("larger than 64 MiB")
	}
	return b, nil
}
