package indirection

import (
	"github.com/openstack/magnum-conductor/db"
)

// Filter dicts arrive as JSON objects; the keys each dbapi honours are
// those of Magnum's _add_*_filters (presence, not truthiness, selects a
// filter). Keys it does not know are ignored, as filter_by never sees them.

func strFilter(f map[string]any, key string) *string {
	v, ok := f[key]
	if !ok || v == nil {
		return nil
	}
	s := pyStr(v)
	return &s
}

func intFilter(f map[string]any, key string) *int64 {
	v, ok := f[key]
	if !ok || v == nil {
		return nil
	}
	if n, ok := isIntLike(v); ok {
		return &n
	}
	if x, ok := v.(float64); ok {
		n := int64(x)
		return &n
	}
	return nil
}

func listFilter(f map[string]any, key string) []string {
	v, ok := f[key]
	if !ok {
		return nil
	}
	out := []string{}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			out = append(out, pyStr(e))
		}
	case string:
		// status="X" is iterated character by character by in_(); a
		// single value is what callers mean.
		out = append(out, x)
	}
	return out
}

func dictFilter(f map[string]any, key string) map[string]string {
	v, ok := f[key].(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(v))
	for k, e := range v {
		out[k] = pyStr(e)
	}
	return out
}

func clusterFilters(f map[string]any) db.ClusterFilters {
	return db.ClusterFilters{
		ClusterTemplateID: strFilter(f, "cluster_template_id"),
		Name:              strFilter(f, "name"),
		StackID:           strFilter(f, "stack_id"),
		APIAddress:        strFilter(f, "api_address"),
		ProjectID:         strFilter(f, "project_id"),
		UserID:            strFilter(f, "user_id"),
		Status:            listFilter(f, "status"),
		NodeCount:         intFilter(f, "node_count"),
		MasterCount:       intFilter(f, "master_count"),
	}
}

func nodeGroupFilters(f map[string]any) db.NodeGroupFilters {
	out := db.NodeGroupFilters{
		Name:      strFilter(f, "name"),
		NodeCount: intFilter(f, "node_count"),
		Role:      strFilter(f, "role"),
		Status:    listFilter(f, "status"),
	}
	if v, ok := f["node_addresses"].([]any); ok {
		out.NodeAddresses = []string{}
		for _, e := range v {
			out.NodeAddresses = append(out.NodeAddresses, pyStr(e))
		}
	}
	if v, ok := f["is_default"]; ok && v != nil {
		b := truthy(v)
		out.IsDefault = &b
	}
	return out
}

func federationFilters(f map[string]any) db.FederationFilters {
	out := db.FederationFilters{
		Name:          strFilter(f, "name"),
		ProjectID:     strFilter(f, "project_id"),
		HostClusterID: strFilter(f, "hostcluster_id"),
		Properties:    dictFilter(f, "properties"),
		Status:        listFilter(f, "status"),
	}
	if v, ok := f["member_ids"].([]any); ok {
		out.MemberIDs = []string{}
		for _, e := range v {
			out.MemberIDs = append(out.MemberIDs, pyStr(e))
		}
	}
	return out
}

func x509Filters(f map[string]any) db.X509KeyPairFilters {
	return db.X509KeyPairFilters{ProjectID: strFilter(f, "project_id"), UserID: strFilter(f, "user_id")}
}

func quotaFilters(f map[string]any) db.QuotaFilters {
	return db.QuotaFilters{Resource: strFilter(f, "resource"), ProjectID: strFilter(f, "project_id")}
}

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case nil:
		return false
	}
	return true
}
