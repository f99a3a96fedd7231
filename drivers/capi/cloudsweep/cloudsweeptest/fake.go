// Package cloudsweeptest is a small OpenStack (Keystone application
// credentials, Octavia, Neutron floating IPs, Cinder v3 volumes and
// types, Manila share types, Nova server groups and flavors, Glance
// images) served by
// httptest, for the tests of package cloudsweep and of the driver's
// deletes. It keeps load balancers, floating IPs and volumes in memory and
// records every request, and answers as the real services do where the
// sweep depends on it (404 for what is gone, 409 for a busy object, the
// filters the sweep sends).
package cloudsweeptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Credential is the application credential the fake accepts.
const (
	CredentialID     = "ac-0001"
	CredentialSecret = "s3cr3t-application-credential"
	ProjectID        = "0123456789abcdef0123456789abcdef"
	token            = "fake-token"
)

// LoadBalancer is an Octavia load balancer.
type LoadBalancer struct {
	ID, Name, VipPortID, ProvisioningStatus string
}

// FloatingIP is a Neutron floating IP.
type FloatingIP struct{ ID, PortID string }

// Volume is a Cinder volume.
type Volume struct {
	ID, Status string
	Metadata   map[string]string
}

// ServerGroup is a Nova server group.
type ServerGroup struct {
	ID, Name string
	Policies []string
}

// Flavor is a Nova flavor.
type Flavor struct {
	ID, Name         string
	VCPUs, RAM, Disk int // RAM in MiB, Disk in GiB
	Ephemeral        int // GiB
	ExtraSpecs       map[string]string
}

// Image is a Glance image; Properties are its extra properties
// (os_distro, kube_version).
type Image struct {
	ID, Name   string
	Properties map[string]string
}

// Cloud is the fake. Its fields are guarded by its mutex: use the methods.
type Cloud struct {
	URL string

	mu       sync.Mutex
	lbs      map[string]*LoadBalancer
	fips     map[string]*FloatingIP
	vols     map[string]*Volume
	sgs      map[string]*ServerGroup
	flavors  map[string]*Flavor
	images   map[string]*Image
	nextID   int
	requests []string
	// Volume and share types (names; the default's name, "" for none);
	// the catalog lists Manila only once share types are set.
	volTypes, shareTypes     []string
	defaultVol, defaultShare string
	manila                   bool
}

// SetVolumeTypes sets Cinder's volume types and its default ("" for none).
func (c *Cloud) SetVolumeTypes(names []string, def string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.volTypes, c.defaultVol = names, def
}

// SetShareTypes adds Manila to the catalog with these share types and
// default ("" for none).
func (c *Cloud) SetShareTypes(names []string, def string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shareTypes, c.defaultShare, c.manila = names, def, true
}

// typesReply answers a list of types (key plural) or the default (key
// singular), with ids type-<name>.
func typesReply(w http.ResponseWriter, plural, singular string, names []string, def string, isDefault bool) {
	if isDefault {
		if def == "" {
			writeJSON(w, http.StatusNotFound, map[string]any{"itemNotFound": map[string]any{"message": "Default type not found"}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{singular: map[string]any{"id": "type-" + def, "name": def, "is_public": true}})
		return
	}
	out := []map[string]any{}
	for _, n := range names {
		out = append(out, map[string]any{"id": "type-" + n, "name": n, "is_public": true})
	}
	writeJSON(w, http.StatusOK, map[string]any{plural: out})
}

// New starts a fake cloud, stopped when t ends.
func New(t testing.TB) *Cloud {
	c := &Cloud{lbs: map[string]*LoadBalancer{}, fips: map[string]*FloatingIP{}, vols: map[string]*Volume{},
		sgs: map[string]*ServerGroup{}, flavors: map[string]*Flavor{}, images: map[string]*Image{}}
	srv := httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// AddLoadBalancer adds lb (ProvisioningStatus ACTIVE when empty).
func (c *Cloud) AddLoadBalancer(lb LoadBalancer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lb.ProvisioningStatus == "" {
		lb.ProvisioningStatus = "ACTIVE"
	}
	c.lbs[lb.ID] = &lb
}

// AddFloatingIP adds fip.
func (c *Cloud) AddFloatingIP(fip FloatingIP) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fips[fip.ID] = &fip
}

// AddVolume adds v.
func (c *Cloud) AddVolume(v Volume) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vols[v.ID] = &v
}

// SetVolumeStatus changes a volume's status (a server deleted detaches it).
func (c *Cloud) SetVolumeStatus(id, status string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v := c.vols[id]; v != nil {
		v.Status = status
	}
}

// AddServerGroup adds g.
func (c *Cloud) AddServerGroup(g ServerGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sgs[g.ID] = &g
}

// ServerGroups lists the server groups, by id.
func (c *Cloud) ServerGroups() []ServerGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ServerGroup
	for _, g := range c.sgs {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// AddFlavor adds f.
func (c *Cloud) AddFlavor(f Flavor) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flavors[f.ID] = &f
}

// AddImage adds img.
func (c *Cloud) AddImage(img Image) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.images[img.ID] = &img
}

// Left lists the ids of what is still there, sorted.
func (c *Cloud) Left() (lbs, fips, vols []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.lbs {
		lbs = append(lbs, id)
	}
	for id := range c.fips {
		fips = append(fips, id)
	}
	for id := range c.vols {
		vols = append(vols, id)
	}
	sort.Strings(lbs)
	sort.Strings(fips)
	sort.Strings(vols)
	return lbs, fips, vols
}

// Requests lists "METHOD path?query" of every request so far.
func (c *Cloud) Requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.requests...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (c *Cloud) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, r.Method+" "+r.URL.RequestURI())
	if r.URL.Path == "/identity/v3/auth/tokens" && r.Method == http.MethodPost {
		c.auth(w, r)
		return
	}
	if r.Header.Get("X-Auth-Token") != token && r.URL.Path != "/lb/" && r.URL.Path != "/net/" && r.URL.Path != "/image/" {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "unauthorized"})
		return
	}
	path := r.URL.Path
	switch {
	case path == "/image/" && r.Method == http.MethodGet:
		// Glance's version discovery.
		writeJSON(w, http.StatusOK, map[string]any{"versions": []map[string]any{
			{"id": "v2.16", "status": "CURRENT", "links": []map[string]any{{"rel": "self", "href": "http://" + r.Host + "/image/v2/"}}}}})
	case (path == "/lb/" || path == "/net/") && r.Method == http.MethodGet:
		// Version discovery: Octavia's and Neutron's catalog endpoints are
		// unversioned.
		writeJSON(w, http.StatusOK, map[string]any{"versions": []map[string]any{
			{"id": "v2.0", "status": "CURRENT", "links": []map[string]any{{"rel": "self", "href": "http://" + r.Host + path + "v2.0/"}}}}})
	case path == "/lb/v2.0/lbaas/loadbalancers" && r.Method == http.MethodGet:
		out := []map[string]any{}
		for _, lb := range c.sortedLBs() {
			out = append(out, map[string]any{"id": lb.ID, "name": lb.Name, "vip_port_id": lb.VipPortID,
				"provisioning_status": lb.ProvisioningStatus, "operating_status": "ONLINE"})
		}
		writeJSON(w, http.StatusOK, map[string]any{"loadbalancers": out})
	case strings.HasPrefix(path, "/lb/v2.0/lbaas/loadbalancers/") && r.Method == http.MethodDelete:
		id := strings.TrimPrefix(path, "/lb/v2.0/lbaas/loadbalancers/")
		lb := c.lbs[id]
		switch {
		case lb == nil:
			writeJSON(w, http.StatusNotFound, map[string]any{"faultstring": "not found"})
		case strings.HasPrefix(lb.ProvisioningStatus, "PENDING_"):
			writeJSON(w, http.StatusConflict, map[string]any{"faultstring": "immutable"})
		case r.URL.Query().Get("cascade") != "true":
			writeJSON(w, http.StatusBadRequest, map[string]any{"faultstring": "load balancer has listeners: cascade needed"})
		default:
			delete(c.lbs, id)
			w.WriteHeader(http.StatusNoContent)
		}
	case path == "/net/v2.0/floatingips" && r.Method == http.MethodGet:
		port := r.URL.Query().Get("port_id")
		out := []map[string]any{}
		for _, f := range c.fips {
			if port == "" || f.PortID == port {
				out = append(out, map[string]any{"id": f.ID, "port_id": f.PortID})
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"floatingips": out})
	case strings.HasPrefix(path, "/net/v2.0/floatingips/") && r.Method == http.MethodDelete:
		id := strings.TrimPrefix(path, "/net/v2.0/floatingips/")
		if c.fips[id] == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"NeutronError": "not found"})
			return
		}
		delete(c.fips, id)
		w.WriteHeader(http.StatusNoContent)
	case path == "/vol/v3/"+ProjectID+"/volumes/detail" && r.Method == http.MethodGet:
		want, err := parseMetadataFilter(r.URL.Query().Get("metadata"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"badRequest": map[string]any{"message": err.Error()}})
			return
		}
		out := []map[string]any{}
		for _, v := range c.sortedVols() {
			match := true
			for k, val := range want {
				match = match && v.Metadata[k] == val
			}
			if match {
				out = append(out, map[string]any{"id": v.ID, "status": v.Status, "metadata": v.Metadata})
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"volumes": out})
	case strings.HasPrefix(path, "/vol/v3/"+ProjectID+"/volumes/") && r.Method == http.MethodDelete:
		id := strings.TrimPrefix(path, "/vol/v3/"+ProjectID+"/volumes/")
		v := c.vols[id]
		switch {
		case v == nil:
			writeJSON(w, http.StatusNotFound, map[string]any{"itemNotFound": map[string]any{"message": "not found"}})
		case v.Status != "available" && !strings.HasPrefix(v.Status, "error"):
			writeJSON(w, http.StatusBadRequest, map[string]any{"badRequest": map[string]any{"message": "Volume status must be available or error"}})
		default:
			delete(c.vols, id)
			w.WriteHeader(http.StatusAccepted)
		}
	case strings.HasPrefix(path, "/image/v2/images"):
		c.serveImages(w, r, strings.TrimPrefix(path, "/image/v2/images"))
	case strings.HasPrefix(path, "/compute/v2.1/"):
		c.serveCompute(w, r, strings.TrimPrefix(path, "/compute/v2.1"))
	case (path == "/vol/v3/"+ProjectID+"/types" || path == "/vol/v3/"+ProjectID+"/types/default") && r.Method == http.MethodGet:
		typesReply(w, "volume_types", "volume_type", c.volTypes, c.defaultVol, strings.HasSuffix(path, "/default"))
	case c.manila && (path == "/share/v2/"+ProjectID+"/types" || path == "/share/v2/"+ProjectID+"/types/default") && r.Method == http.MethodGet:
		typesReply(w, "share_types", "share_type", c.shareTypes, c.defaultShare, strings.HasSuffix(path, "/default"))
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no route " + r.Method + " " + path})
	}
}

func (c *Cloud) serveCompute(w http.ResponseWriter, r *http.Request, path string) {
	switch {
	case path == "/os-server-groups" && r.Method == http.MethodGet:
		out := []map[string]any{}
		for _, g := range c.sortedGroups() {
			out = append(out, map[string]any{"id": g.ID, "name": g.Name, "policies": g.Policies, "members": []string{}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"server_groups": out})
	case path == "/os-server-groups" && r.Method == http.MethodPost:
		var body struct {
			ServerGroup struct {
				Name     string   `json:"name"`
				Policies []string `json:"policies"`
			} `json:"server_group"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.ServerGroup.Name == "" || len(body.ServerGroup.Policies) != 1 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"badRequest": map[string]any{"message": "invalid server group"}})
			return
		}
		// The soft policies need microversion 2.15.
		if strings.HasPrefix(body.ServerGroup.Policies[0], "soft-") && r.Header.Get("X-OpenStack-Nova-API-Version") < "2.15" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"badRequest": map[string]any{"message": "soft policies need 2.15"}})
			return
		}
		c.nextID++
		g := &ServerGroup{ID: fmt.Sprintf("5e4f0000-0000-4000-8000-%012d", c.nextID), Name: body.ServerGroup.Name, Policies: body.ServerGroup.Policies}
		c.sgs[g.ID] = g
		writeJSON(w, http.StatusOK, map[string]any{"server_group": map[string]any{"id": g.ID, "name": g.Name, "policies": g.Policies, "members": []string{}}})
	case strings.HasPrefix(path, "/os-server-groups/") && r.Method == http.MethodDelete:
		id := strings.TrimPrefix(path, "/os-server-groups/")
		if c.sgs[id] == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"itemNotFound": map[string]any{"message": "not found"}})
			return
		}
		delete(c.sgs, id)
		w.WriteHeader(http.StatusNoContent)
	case path == "/flavors/detail" && r.Method == http.MethodGet:
		out := []map[string]any{}
		for _, f := range c.flavors {
			out = append(out, map[string]any{"id": f.ID, "name": f.Name, "vcpus": f.VCPUs, "ram": f.RAM, "disk": f.Disk,
				"OS-FLV-EXT-DATA:ephemeral": f.Ephemeral})
		}
		writeJSON(w, http.StatusOK, map[string]any{"flavors": out})
	case strings.HasPrefix(path, "/flavors/") && r.Method == http.MethodGet && strings.HasSuffix(path, "/os-extra_specs"):
		f := c.flavors[strings.TrimSuffix(strings.TrimPrefix(path, "/flavors/"), "/os-extra_specs")]
		if f == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"itemNotFound": map[string]any{"message": "flavor not found"}})
			return
		}
		specs := f.ExtraSpecs
		if specs == nil {
			specs = map[string]string{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"extra_specs": specs})
	case strings.HasPrefix(path, "/flavors/") && r.Method == http.MethodGet:
		f := c.flavors[strings.TrimPrefix(path, "/flavors/")]
		if f == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"itemNotFound": map[string]any{"message": "flavor not found"}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"flavor": map[string]any{"id": f.ID, "name": f.Name, "vcpus": f.VCPUs,
			"ram": f.RAM, "disk": f.Disk, "OS-FLV-EXT-DATA:ephemeral": f.Ephemeral}})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no route " + r.Method + " /compute/v2.1" + path})
	}
}

// imageJSON is an image as Glance v2 shows it: extra properties at the
// top level.
func imageJSON(img *Image) map[string]any {
	out := map[string]any{"id": img.ID, "name": img.Name, "status": "active", "visibility": "public",
		"container_format": "bare", "disk_format": "qcow2", "tags": []string{}}
	for k, v := range img.Properties {
		out[k] = v
	}
	return out
}

func (c *Cloud) serveImages(w http.ResponseWriter, r *http.Request, path string) {
	switch {
	case path == "" && r.Method == http.MethodGet:
		name := r.URL.Query().Get("name")
		out := []map[string]any{}
		ids := make([]string, 0, len(c.images))
		for id := range c.images {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			if img := c.images[id]; name == "" || img.Name == name {
				out = append(out, imageJSON(img))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"images": out})
	case strings.HasPrefix(path, "/") && r.Method == http.MethodGet:
		img := c.images[strings.TrimPrefix(path, "/")]
		if img == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "No image found"})
			return
		}
		writeJSON(w, http.StatusOK, imageJSON(img))
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no route " + r.Method + " /image/v2/images" + path})
	}
}

func (c *Cloud) sortedGroups() []*ServerGroup {
	var out []*ServerGroup
	for _, g := range c.sgs {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (c *Cloud) sortedLBs() []*LoadBalancer {
	var out []*LoadBalancer
	for _, lb := range c.lbs {
		out = append(out, lb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (c *Cloud) sortedVols() []*Volume {
	var out []*Volume
	for _, v := range c.vols {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// parseMetadataFilter reads Cinder's metadata filter as gophercloud sends
// it: {'key':'value', …}.
func parseMetadataFilter(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, fmt.Errorf("invalid metadata filter %q", s)
	}
	for _, kv := range strings.Split(strings.Trim(s, "{}"), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), ":")
		if !ok {
			return nil, fmt.Errorf("invalid metadata filter %q", s)
		}
		out[strings.Trim(k, `'"`)] = strings.Trim(v, `'"`)
	}
	return out, nil
}

func (c *Cloud) auth(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Auth struct {
			Identity struct {
				Methods               []string `json:"methods"`
				ApplicationCredential struct {
					ID     string `json:"id"`
					Secret string `json:"secret"`
				} `json:"application_credential"`
			} `json:"identity"`
		} `json:"auth"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	ac := body.Auth.Identity.ApplicationCredential
	if ac.ID != CredentialID || ac.Secret != CredentialSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": 401, "message": "The request you have made requires authentication."}})
		return
	}
	base := "http://" + r.Host
	endpoint := func(typ, url string) map[string]any {
		return map[string]any{"type": typ, "name": typ, "endpoints": []map[string]any{
			{"interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": url, "id": typ + "-public"}}}
	}
	catalog := []map[string]any{
		endpoint("identity", base+"/identity/v3"),
		endpoint("load-balancer", base+"/lb"),
		endpoint("network", base+"/net"),
		endpoint("block-storage", base+"/vol/v3/"+ProjectID),
		endpoint("compute", base+"/compute/v2.1"),
		endpoint("image", base+"/image/"),
	}
	if c.manila {
		catalog = append(catalog, endpoint("shared-file-system", base+"/share/v2/"+ProjectID))
	}
	w.Header().Set("X-Subject-Token", token)
	writeJSON(w, http.StatusCreated, map[string]any{"token": map[string]any{
		"methods": []string{"application_credential"},
		"project": map[string]any{"id": ProjectID, "name": "demo", "domain": map[string]any{"id": "default"}},
		"catalog": catalog,
	}})
}
