package indirection

import (
	"context"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
)

// listParams are the pagination parameters every list remotable takes.
func listParams() []param {
	return []param{opt("limit"), opt("marker"), opt("sort_key"), opt("sort_dir")}
}

func listSig(fn string, extra ...param) signature {
	return sig(fn, append(listParams(), extra...)...)
}

func listOpts(b bound) (db.ListOpts, error) {
	limit, err := b.optInt("limit")
	if err != nil {
		return db.ListOpts{}, err
	}
	// The listed objects go straight into the reply: no change snapshots.
	return db.ListOpts{Limit: limit, Marker: b.str("marker"), SortKey: b.str("sort_key"), SortDir: b.str("sort_dir"),
		ReadOnly: true}, nil
}

// filteredList runs a list remotable: limit, marker, sort_key, sort_dir
// and filters from the bound arguments, the filters converted by conv.
func filteredList[F any, T objects.Object](ctx context.Context, b bound, conv func(map[string]any) F,
	list func(context.Context, db.ListOpts, F) ([]T, error)) (any, error) {
	opts, err := listOpts(b)
	if err != nil {
		return nil, err
	}
	f, err := b.dict("filters")
	if err != nil {
		return nil, err
	}
	return asObjects(list(ctx, opts, conv(f)))
}

// filteredCount runs a get_count_all remotable with its filters argument.
func filteredCount[F any](ctx context.Context, b bound, conv func(map[string]any) F,
	count func(context.Context, F) (int64, error)) (any, error) {
	f, err := b.dict("filters")
	if err != nil {
		return nil, err
	}
	return count(ctx, conv(f))
}

// asObjects returns a typed list as []objects.Object.
func asObjects[T objects.Object](list []T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	out := make([]objects.Object, len(list))
	for i, o := range list {
		out[i] = o
	}
	return out, nil
}

// one returns a typed object result, keeping a nil pointer a nil result.
func one[T objects.Object](o T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return o, nil
}

func invalidIdentity(v any) *exception.Error {
	return exception.ClassInvalidIdentity.New(map[string]any{"identity": v})
}

// byID calls get with an int-like ident, or fails with notFound(ident) as
// the database finds no row for a non-integer id.
func byID[T objects.Object](v any, get func(int64) (T, error), notFound func(any) *exception.Error) (any, error) {
	id, ok := isIntLike(v)
	if !ok {
		return nil, notFound(v)
	}
	return one(get(id))
}

// byIdentity is a get by id or uuid: an int-like ident by id (getID), a
// uuid-like one by uuid (getUUID), anything else InvalidIdentity.
func byIdentity[T objects.Object](v any, getID func(int64) (T, error), getUUID func(string) (T, error),
	notFound func(any) *exception.Error) (any, error) {
	switch {
	case isIntLikeOK(v):
		return byID(v, getID, notFound)
	case isUUIDLike(v):
		return one(getUUID(pyStr(v)))
	}
	return nil, invalidIdentity(v)
}

// classMethods is the table of remotable class methods, by object and
// method name: one function per object below.
func (h *Handler) classMethods() map[string]map[string]classMethod {
	s := h.store
	return map[string]map[string]classMethod{
		objects.NameCluster:         clusterMethods(s),
		objects.NameClusterTemplate: clusterTemplateMethods(s),
		objects.NameNodeGroup:       nodeGroupMethods(s),
		objects.NameX509KeyPair:     x509KeyPairMethods(s),
		objects.NameMagnumService:   magnumServiceMethods(s),
		objects.NameQuota:           quotaMethods(s),
		objects.NameStats:           statsMethods(s),
		objects.NameFederation:      federationMethods(s),
	}
}

// The not-found errors of the lookups by id, as the database layer raises
// them for an id that is not an integer.
func clusterNotFound(v any) *exception.Error         { return exception.ClusterNotFound(v) }
func clusterTemplateNotFound(v any) *exception.Error { return exception.ClusterTemplateNotFound(v) }
func nodeGroupNotFound(v any) *exception.Error       { return exception.NodeGroupNotFound(v) }
func x509KeyPairNotFound(v any) *exception.Error {
	return exception.ClassX509KeyPairNotFound.New(map[string]any{"x509keypair": v})
}
func federationNotFound(v any) *exception.Error {
	return exception.ClassFederationNotFound.New(map[string]any{"federation": v})
}
func quotaNotFound(v any) *exception.Error {
	return exception.ClassQuotaNotFound.New(map[string]any{"msg": "quota id " + pyStr(v) + " ."})
}

// clusterMethods are Cluster's remotable class methods.
func clusterMethods(s Store) map[string]classMethod {
	return map[string]classMethod{
		"get": {sig("get", req("cluster_id")), func(ctx context.Context, b bound) (any, error) {
			return byIdentity(b["cluster_id"], func(id int64) (*objects.Cluster, error) { return s.GetClusterByID(ctx, id) },
				func(uuid string) (*objects.Cluster, error) { return s.GetClusterByUUID(ctx, uuid) }, clusterNotFound)
		}},
		"get_by_id": {sig("get_by_id", req("cluster_id")), func(ctx context.Context, b bound) (any, error) {
			return byID(b["cluster_id"], func(id int64) (*objects.Cluster, error) { return s.GetClusterByID(ctx, id) }, clusterNotFound)
		}},
		"get_by_uuid": {sig("get_by_uuid", req("uuid")), func(ctx context.Context, b bound) (any, error) {
			return one(s.GetClusterByUUID(ctx, b.str("uuid")))
		}},
		"get_by_name": {sig("get_by_name", req("name")), func(ctx context.Context, b bound) (any, error) {
			return one(s.GetClusterByName(ctx, b.str("name")))
		}},
		"get_count_all": {sig("get_count_all", opt("filters")), func(ctx context.Context, b bound) (any, error) {
			return filteredCount(ctx, b, clusterFilters, s.CountClusters)
		}},
		"list": {listSig("list", opt("filters")), func(ctx context.Context, b bound) (any, error) {
			return filteredList(ctx, b, clusterFilters, s.ListClusters)
		}},
		// get_stats is broken in Magnum (it passes project_id as the
		// context); here it returns (clusters, nodes) as
		// dbapi.get_cluster_stats does.
		"get_stats": {sig("get_stats", opt("project_id")), func(ctx context.Context, b bound) (any, error) {
			clusters, nodes, err := s.ClusterStats(ctx, b.str("project_id"))
			if err != nil {
				return nil, err
			}
			return []any{clusters, nodes}, nil
		}},
	}
}

// clusterTemplateMethods are ClusterTemplate's remotable class methods.
func clusterTemplateMethods(s Store) map[string]classMethod {
	getCT := func(ctx context.Context, v any) (any, error) {
		switch {
		case isIntLikeOK(v):
			return byID(v, func(id int64) (*objects.ClusterTemplate, error) { return s.GetClusterTemplateByID(ctx, id) }, clusterTemplateNotFound)
		case isUUIDLike(v):
			return one(s.GetClusterTemplateByUUID(ctx, pyStr(v)))
		}
		return one(s.GetClusterTemplateByName(ctx, pyStr(v)))
	}
	return map[string]classMethod{
		"get": {sig("get", req("cluster_template_id")), func(ctx context.Context, b bound) (any, error) {
			return getCT(ctx, b["cluster_template_id"])
		}},
		"get_by_id": {sig("get_by_id", req("cluster_template_id")), func(ctx context.Context, b bound) (any, error) {
			return byID(b["cluster_template_id"], func(id int64) (*objects.ClusterTemplate, error) {
				return s.GetClusterTemplateByID(ctx, id)
			}, clusterTemplateNotFound)
		}},
		"get_by_uuid": {sig("get_by_uuid", req("uuid")), func(ctx context.Context, b bound) (any, error) {
			return one(s.GetClusterTemplateByUUID(ctx, b.str("uuid")))
		}},
		"get_by_name": {sig("get_by_name", req("name")), func(ctx context.Context, b bound) (any, error) {
			return one(s.GetClusterTemplateByName(ctx, b.str("name")))
		}},
		"list": {listSig("list"), func(ctx context.Context, b bound) (any, error) {
			opts, err := listOpts(b)
			if err != nil {
				return nil, err
			}
			return asObjects(s.ListClusterTemplates(ctx, opts, db.ClusterTemplateFilters{}))
		}},
	}
}

// nodeGroupMethods are NodeGroup's remotable class methods.
func nodeGroupMethods(s Store) map[string]classMethod {
	getNG := func(ctx context.Context, cluster string, v any) (*objects.NodeGroup, error) {
		switch {
		case isIntLikeOK(v):
			id, _ := isIntLike(v)
			return s.GetNodeGroupByID(ctx, cluster, id)
		case isUUIDLike(v):
			return s.GetNodeGroupByUUID(ctx, cluster, pyStr(v))
		}
		return s.GetNodeGroupByName(ctx, cluster, pyStr(v))
	}
	return map[string]classMethod{
		"get": {sig("get", req("cluster_id"), req("nodegroup_id")), func(ctx context.Context, b bound) (any, error) {
			return one(getNG(ctx, b.str("cluster_id"), b["nodegroup_id"]))
		}},
		"get_by_id": {sig("get_by_id", req("cluster"), req("id_")), func(ctx context.Context, b bound) (any, error) {
			return byID(b["id_"], func(id int64) (*objects.NodeGroup, error) {
				return s.GetNodeGroupByID(ctx, b.str("cluster"), id)
			}, nodeGroupNotFound)
		}},
		"get_by_uuid": {sig("get_by_uuid", req("cluster"), req("uuid")), func(ctx context.Context, b bound) (any, error) {
			return one(s.GetNodeGroupByUUID(ctx, b.str("cluster"), b.str("uuid")))
		}},
		"get_by_name": {sig("get_by_name", req("cluster"), req("name")), func(ctx context.Context, b bound) (any, error) {
			return one(s.GetNodeGroupByName(ctx, b.str("cluster"), b.str("name")))
		}},
		"get_count_all": {sig("get_count_all", req("cluster_id")), func(ctx context.Context, b bound) (any, error) {
			return s.CountNodeGroups(ctx, b.str("cluster_id"))
		}},
		"list": {sig("list", append([]param{req("cluster_id")}, append(listParams(), opt("filters"))...)...),
			func(ctx context.Context, b bound) (any, error) {
				opts, err := listOpts(b)
				if err != nil {
					return nil, err
				}
				f, err := b.dict("filters")
				if err != nil {
					return nil, err
				}
				return asObjects(s.ListNodeGroups(ctx, b.str("cluster_id"), opts, nodeGroupFilters(f)))
			}},
		"update_nodegroup": {sig("update_nodegroup", req("cluster_id"), req("nodegroup_id"), req("values")),
			func(ctx context.Context, b bound) (any, error) {
				values, err := b.dict("values")
				if err != nil {
					return nil, err
				}
				cur, err := getNG(ctx, b.str("cluster_id"), b["nodegroup_id"])
				if err != nil {
					return nil, err
				}
				return one(s.UpdateNodeGroupValues(ctx, b.str("cluster_id"), cur.UUID, values))
			}},
	}
}

// x509KeyPairMethods are X509KeyPair's remotable class methods.
func x509KeyPairMethods(s Store) map[string]classMethod {
	return map[string]classMethod{
		"get": {sig("get", req("x509keypair_id")), func(ctx context.Context, b bound) (any, error) {
			return byIdentity(b["x509keypair_id"], func(id int64) (*objects.X509KeyPair, error) { return s.GetX509KeyPairByID(ctx, id) },
				func(uuid string) (*objects.X509KeyPair, error) { return s.GetX509KeyPairByUUID(ctx, uuid) }, x509KeyPairNotFound)
		}},
		"get_by_id": {sig("get_by_id", req("x509keypair_id")), func(ctx context.Context, b bound) (any, error) {
			return byID(b["x509keypair_id"], func(id int64) (*objects.X509KeyPair, error) {
				return s.GetX509KeyPairByID(ctx, id)
			}, x509KeyPairNotFound)
		}},
		"get_by_uuid": {sig("get_by_uuid", req("uuid")), func(ctx context.Context, b bound) (any, error) {
			return one(s.GetX509KeyPairByUUID(ctx, b.str("uuid")))
		}},
		"list": {listSig("list", opt("filters")), func(ctx context.Context, b bound) (any, error) {
			return filteredList(ctx, b, x509Filters, s.ListX509KeyPairs)
		}},
	}
}

// magnumServiceMethods are MagnumService's remotable class methods.
func magnumServiceMethods(s Store) map[string]classMethod {
	return map[string]classMethod{
		"get_by_host_and_binary": {sig("get_by_host_and_binary", req("host"), req("binary")),
			func(ctx context.Context, b bound) (any, error) {
				return one(s.GetMagnumServiceByHostAndBinary(ctx, b.str("host"), b.str("binary")))
			}},
		"list": {listSig("list"), func(ctx context.Context, b bound) (any, error) {
			opts, err := listOpts(b)
			if err != nil {
				return nil, err
			}
			return asObjects(s.ListMagnumServices(ctx, opts))
		}},
	}
}

// quotaMethods are Quota's remotable class methods.
func quotaMethods(s Store) map[string]classMethod {
	return map[string]classMethod{
		"get_quota_by_project_id_resource": {sig("get_quota_by_project_id_resource", req("project_id"), req("resource")),
			func(ctx context.Context, b bound) (any, error) {
				return one(s.GetQuotaByProjectResource(ctx, b.str("project_id"), b.str("resource")))
			}},
		"get_by_id": {sig("get_by_id", req("quota_id")), func(ctx context.Context, b bound) (any, error) {
			return byID(b["quota_id"], func(id int64) (*objects.Quota, error) { return s.GetQuotaByID(ctx, id) }, quotaNotFound)
		}},
		"list": {listSig("list", opt("filters")), func(ctx context.Context, b bound) (any, error) {
			return filteredList(ctx, b, quotaFilters, s.ListQuotas)
		}},
		// quota_get_all_by_project_id calls a dbapi method that does not
		// exist in Magnum; here it lists the project's quotas.
		"quota_get_all_by_project_id": {sig("quota_get_all_by_project_id", req("project_id")),
			func(ctx context.Context, b bound) (any, error) {
				return asObjects(s.ListQuotasByProject(ctx, b.str("project_id")))
			}},
		"update_quota": {sig("update_quota", req("project_id"), req("quota")), func(ctx context.Context, b bound) (any, error) {
			values, err := b.dict("quota")
			if err != nil {
				return nil, err
			}
			return one(s.UpdateQuota(ctx, b.str("project_id"), values))
		}},
	}
}

// statsMethods are Stats' remotable class methods.
func statsMethods(s Store) map[string]classMethod {
	return map[string]classMethod{
		"get_cluster_stats": {sig("get_cluster_stats", opt("project_id")), func(ctx context.Context, b bound) (any, error) {
			clusters, nodes, err := s.ClusterStats(ctx, b.str("project_id"))
			if err != nil {
				return nil, err
			}
			st := &objects.Stats{Clusters: clusters, Nodes: objects.Int(nodes)}
			objects.MarkChanged(st, "clusters", "nodes")
			return st, nil
		}},
	}
}

// federationMethods are Federation's remotable class methods.
func federationMethods(s Store) map[string]classMethod {
	return map[string]classMethod{
		"get": {sig("get", req("federation_id")), func(ctx context.Context, b bound) (any, error) {
			return byIdentity(b["federation_id"], func(id int64) (*objects.Federation, error) { return s.GetFederationByID(ctx, id) },
				func(uuid string) (*objects.Federation, error) { return s.GetFederationByUUID(ctx, uuid) }, federationNotFound)
		}},
		"get_by_id": {sig("get_by_id", req("federation_id")), func(ctx context.Context, b bound) (any, error) {
			return byID(b["federation_id"], func(id int64) (*objects.Federation, error) {
				return s.GetFederationByID(ctx, id)
			}, federationNotFound)
		}},
		"get_by_uuid": {sig("get_by_uuid", req("uuid")), func(ctx context.Context, b bound) (any, error) {
			return one(s.GetFederationByUUID(ctx, b.str("uuid")))
		}},
		"get_by_name": {sig("get_by_name", req("name")), func(ctx context.Context, b bound) (any, error) {
			return one(s.GetFederationByName(ctx, b.str("name")))
		}},
		"get_count_all": {sig("get_count_all", opt("filters")), func(ctx context.Context, b bound) (any, error) {
			return filteredCount(ctx, b, federationFilters, s.CountFederations)
		}},
		"list": {listSig("list", opt("filters")), func(ctx context.Context, b bound) (any, error) {
			return filteredList(ctx, b, federationFilters, s.ListFederations)
		}},
	}
}

func isIntLikeOK(v any) bool {
	_, ok := isIntLike(v)
	return ok
}

// afterSave undoes what a store's save does beyond Magnum's: Python's save
// leaves updated_at as it was on the object and sets no field that was not
// set, so the reply's updates stay empty.
func afterSave(o, before objects.Object) {
	if copied := objects.RefreshFrom(o, before); len(copied) > 0 {
		objects.ResetChanges(o, copied...)
	}
	unsetAgain(o, before)
}

// unsetAgain makes the fields that were unset on before unset on o again
// when they hold nothing (a full ResetChanges marks every field set).
func unsetAgain(o, before objects.Object) {
	for _, f := range objects.Fields(o.ObjName()) {
		if !objects.IsSet(before, f) {
			if p, _, _ := objects.FieldPrimitive(o, f, nil); isEmpty(p) {
				objects.Unset(o, f)
			}
		}
	}
}

func isEmpty(p any) bool {
	switch x := p.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case int64:
		return x == 0
	case bool:
		return !x
	}
	return false
}

// resetOwnChanges is obj_reset_changes() without marking fields set.
func resetOwnChanges(o objects.Object) {
	if ch := objects.Changes(o); len(ch) > 0 {
		objects.ResetChanges(o, ch...)
	}
}

// on adapts a store method of one class to an instanceMethod.
func on[T objects.Object](f func(context.Context, T) error) instanceMethod {
	return func(ctx context.Context, o objects.Object) error { return f(ctx, o.(T)) }
}

// saved wraps a store save with Python's observable effects.
func saved(fn instanceMethod) instanceMethod {
	return func(ctx context.Context, o objects.Object) error {
		before := objects.Clone(o)
		if err := fn(ctx, o); err != nil {
			return err
		}
		afterSave(o, before)
		return nil
	}
}

// destroyed wraps a store delete: the object's own changes are reset, as
// Python's destroy does.
func destroyed(fn instanceMethod) instanceMethod {
	return func(ctx context.Context, o objects.Object) error {
		if err := fn(ctx, o); err != nil {
			return err
		}
		resetOwnChanges(o)
		return nil
	}
}

// refreshed is refresh: the object takes the fields of the stored one that
// get reads.
func refreshed[T objects.Object](get func(context.Context, T) (T, error)) instanceMethod {
	return func(ctx context.Context, o objects.Object) error {
		cur, err := get(ctx, o.(T))
		if err != nil {
			return err
		}
		objects.RefreshFrom(o, cur)
		return nil
	}
}

func (h *Handler) instanceMethods() map[string]map[string]instanceMethod {
	s := h.store
	uuid := objects.Deref
	return map[string]map[string]instanceMethod{
		objects.NameCluster: {
			"create": on(s.CreateCluster),
			"save":   saved(on(s.SaveCluster)),
			"destroy": destroyed(on(func(ctx context.Context, c *objects.Cluster) error {
				return s.DestroyCluster(ctx, uuid(c.UUID))
			})),
			"refresh": refreshed(func(ctx context.Context, c *objects.Cluster) (*objects.Cluster, error) {
				return s.GetClusterByUUID(ctx, uuid(c.UUID))
			}),
		},
		objects.NameClusterTemplate: {
			"create": on(s.CreateClusterTemplate),
			"save":   saved(on(s.SaveClusterTemplate)),
			"destroy": destroyed(on(func(ctx context.Context, t *objects.ClusterTemplate) error {
				return s.DestroyClusterTemplate(ctx, uuid(t.UUID))
			})),
			"refresh": refreshed(func(ctx context.Context, t *objects.ClusterTemplate) (*objects.ClusterTemplate, error) {
				return s.GetClusterTemplateByUUID(ctx, uuid(t.UUID))
			}),
		},
		objects.NameNodeGroup: {
			"create": on(s.CreateNodeGroup),
			"save":   saved(on(s.SaveNodeGroup)),
			"destroy": destroyed(on(func(ctx context.Context, ng *objects.NodeGroup) error {
				return s.DestroyNodeGroup(ctx, ng.ClusterID, ng.UUID)
			})),
			"refresh": refreshed(func(ctx context.Context, ng *objects.NodeGroup) (*objects.NodeGroup, error) {
				return s.GetNodeGroupByUUID(ctx, ng.ClusterID, ng.UUID)
			}),
		},
		objects.NameX509KeyPair: {
			"create": on(s.CreateX509KeyPair),
			"save":   saved(on(s.SaveX509KeyPair)),
			"destroy": destroyed(on(func(ctx context.Context, k *objects.X509KeyPair) error {
				return s.DestroyX509KeyPair(ctx, uuid(k.UUID))
			})),
			"refresh": refreshed(func(ctx context.Context, k *objects.X509KeyPair) (*objects.X509KeyPair, error) {
				return s.GetX509KeyPairByUUID(ctx, uuid(k.UUID))
			}),
		},
		objects.NameMagnumService: {
			"create": on(s.CreateMagnumService),
			"save":   saved(on(s.SaveMagnumService)),
			"destroy": destroyed(on(func(ctx context.Context, ms *objects.MagnumService) error {
				return s.DestroyMagnumService(ctx, ms.ID)
			})),
			// report_state_up is report_count += 1, then save.
			"report_state_up": func(ctx context.Context, o objects.Object) error {
				o.(*objects.MagnumService).ReportCount++
				return saved(on(s.SaveMagnumService))(ctx, o)
			},
		},
		objects.NameQuota: {
			"create": on(s.CreateQuota),
			"delete": destroyed(on(func(ctx context.Context, q *objects.Quota) error {
				return s.DeleteQuota(ctx, q.ProjectID, q.Resource)
			})),
		},
		objects.NameFederation: {
			"create": on(s.CreateFederation),
			"save":   saved(on(s.SaveFederation)),
			"destroy": destroyed(on(func(ctx context.Context, f *objects.Federation) error {
				return s.DestroyFederation(ctx, uuid(f.UUID))
			})),
			"refresh": refreshed(func(ctx context.Context, f *objects.Federation) (*objects.Federation, error) {
				return s.GetFederationByUUID(ctx, uuid(f.UUID))
			}),
		},
	}
}
