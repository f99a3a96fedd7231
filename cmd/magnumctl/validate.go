package main

import (
	"regexp"
	"strings"
)

// The checks magnum-api makes of a request before it sends anything to
// the conductor (its WSME types and validators), made here so that a cast
// or call is never sent with input magnum-api would have refused.

// clusterName is magnum-api's Cluster.name type: 1 to 242 characters, a
// letter first, then letters, digits, '_', '.' and '-'.
var clusterName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]*$`)

func checkClusterName(name string) error {
	switch {
	case name == "":
		return usagef("a cluster name is required")
	case len(name) > 242:
		return usagef("cluster name %.20q... is %d characters long; magnum-api takes at most 242", name, len(name))
	case !clusterName.MatchString(name):
		return usagef("cluster name %q is not valid: magnum-api takes a letter first, then letters, digits, '_', '.' and '-'", name)
	}
	return nil
}

// checkName is magnum-api's StringType(min_length=1, max_length=255) of
// templates' and nodegroups' names.
func checkName(what, name string) error {
	switch {
	case name == "":
		return usagef("a %s name is required", what)
	case len(name) > 255:
		return usagef("%s name %.20q... is %d characters long; magnum-api takes at most 255", what, name, len(name))
	}
	return nil
}

// atLeast refuses a count flag below min.
func atLeast(flag string, v, min int64) error {
	if v < min {
		return usagef("--%s must be %d or more, not %d", flag, min, v)
	}
	return nil
}

// parseLabels reads --labels as the openstack client does
// (magnumclient's format_labels): each value is key=value, or, when it
// holds more than one '=', a list of them separated by ',' or ';'. A key
// given twice gets both values joined with ','. Spaces around keys and
// values are dropped.
func parseLabels(values ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		if strings.TrimSpace(v) == "" {
			continue
		}
		items := []string{v}
		if strings.Count(v, "=") > 1 {
			items = strings.Split(strings.ReplaceAll(v, ";", ","), ",")
		}
		for _, kv := range items {
			if strings.TrimSpace(kv) == "" && len(items) > 1 {
				continue // "a=1,,b=2" or a trailing ','
			}
			k, val, ok := strings.Cut(kv, "=")
			k, val = strings.TrimSpace(k), strings.TrimSpace(val)
			if !ok || k == "" {
				return nil, usagef("--labels: %q is not key=value", kv)
			}
			if prev, dup := out[k]; dup {
				val = prev + "," + val
			}
			out[k] = val
		}
	}
	return out, nil
}

// joinTags is --tags as the openstack client sends them: every value
// split at ',', each tag once, joined with ','.
func joinTags(values []string) string {
	var tags []string
	seen := map[string]bool{}
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" && !seen[t] {
				seen[t] = true
				tags = append(tags, t)
			}
		}
	}
	return strings.Join(tags, ",")
}
