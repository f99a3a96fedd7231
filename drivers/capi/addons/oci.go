package addons

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/registry"
)

// ociScheme prefixes the repository of a chart kept in an OCI registry
// (Helm's own spelling: helm pull oci://host/path/chart --version v).
const ociScheme = "oci://"

// RegistryCredentialsFile is, in the chart cache directory, the file the
// registry client reads credentials from (Helm's registry config.json
// format, as `helm registry login --registry-config` writes it); Docker's
// config.json is read after it. Absent, registries are asked anonymously.
const RegistryCredentialsFile = "registry-config.json" //nolint:gosec // G101: a file name, not a credential

// registryClient returns a Helm SDK OCI registry client for one pull, over
// the cache's HTTP client with every request bound to ctx: the SDK's Pull
// takes no context, so without this a cancelled caller would leave its
// requests running until the HTTP client's timeout.
func (c *Charts) registryClient(ctx context.Context) (*registry.Client, error) {
	base := c.client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc := *c.client
	hc.Transport = ctxTransport{ctx: ctx, base: base}
	rc, err := registry.NewClient(registry.ClientOptHTTPClient(&hc), registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(c.dir, RegistryCredentialsFile)))
	if err != nil {
		return nil, fmt.Errorf("addons: OCI registry client: %w", err)
	}
	return rc, nil
}

// ctxTransport ends a request, and reading its response, when ctx ends as
// well as when the request's own context does.
type ctxTransport struct {
	ctx  context.Context // the caller's, for the requests of one pull
	base http.RoundTripper
}

func (t ctxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.ctx, cancel) //nolint:contextcheck // the request context is req's (rctx); t.ctx, the pull's caller's, only cancels it: the Helm SDK's Pull takes no context to pass down
	end := func() { stop(); cancel() }
	resp, err := t.base.RoundTrip(req.WithContext(rctx))
	if err != nil {
		end()
		return nil, err
	}
	resp.Body = &endBody{ReadCloser: resp.Body, end: end}
	return resp, nil
}

// endBody releases its request's context when closed.
type endBody struct {
	io.ReadCloser
	end func()
}

func (b *endBody) Close() error {
	err := b.ReadCloser.Close()
	b.end()
	return err
}

// downloadOCI pulls ref from its OCI registry with the Helm SDK (the
// manifest, its config and the chart layer, each checked against its
// descriptor's digest), checks the chart archive's SHA-256 against the
// manifest's layer digest once more, and keeps it at dest.
func (c *Charts) downloadOCI(ctx context.Context, ref ChartRef, dest string) error {
	repo := strings.Trim(strings.TrimPrefix(ref.Repo, ociScheme), "/")
	if repo == "" || strings.ContainsAny(repo, "@:?#") && !hostPortOnly(repo) {
		return fmt.Errorf("addons: chart repository %q: want oci://host[:port]/path", ref.Repo)
	}
	rc, err := c.registryClient(ctx)
	if err != nil {
		return err
	}
	res, err := rc.Pull(repo+"/"+ref.Chart+":"+ref.Version, registry.PullOptWithChart(true))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("addons: pull chart %s: %w", ref, ctx.Err())
		}
		return fmt.Errorf("addons: pull chart %s: %w", ref, err)
	}
	archive := res.Chart.Data
	if len(archive) > maxChartBytes {
		return fmt.Errorf("addons: chart %s: larger than 64 MiB", ref)
	}
	sum := sha256.Sum256(archive)
	if got := "sha256:" + hex.EncodeToString(sum[:]); res.Chart.Digest == "" || got != res.Chart.Digest {
		return fmt.Errorf("addons: chart %s: digest %s does not match the manifest's %s", ref, got, res.Chart.Digest)
	}
	return c.store(archive, dest)
}

// hostPortOnly reports whether the only ':' of repo is its host's port.
func hostPortOnly(repo string) bool {
	if strings.ContainsAny(repo, "@?#") {
		return false
	}
	host, _, _ := strings.Cut(repo, "/")
	return strings.Count(repo, ":") == 1 && strings.Contains(host, ":")
}
