package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// The conductor magnumctl talks to may be an older or newer Python one:
// Magnum 15.0.1 takes its own object versions (Cluster 1.23,
// ClusterTemplate 1.20, NodeGroup 1.1) and serves object_class_action;
// 2026.1 and later serve object_class_action_versions instead. magnumctl
// speaks the newest versions and object_class_action (what this conductor
// serves, with both methods), and learns from the peer's refusals: a
// NoSuchMethod for object_class_action switches to
// object_class_action_versions, an IncompatibleObjectVersion names the
// version the peer takes, and the request is sent again at it. A refused
// request did nothing: the peer refuses while decoding its arguments.

// maxNegotiation bounds the requests sent again for one call (one per
// object class a request carries, and the method switch).
const maxNegotiation = 5

// version is the version of class name magnumctl sends.
func (s *session) version(name string) string {
	if v := s.peer[name]; v != "" {
		return v
	}
	return objects.NewestVersion(name)
}

// manifest is the version of every class magnumctl sends (the
// object_versions of object_class_action_versions, and the manifest of
// nested objects).
func (s *session) manifest() map[string]string {
	m := map[string]string{}
	for _, n := range objects.Names() {
		m[n] = s.version(n)
	}
	return m
}

// primitive is o's primitive at the version the peer takes.
func (s *session) primitive(o objects.Object) (json.RawMessage, error) {
	return objects.EncodeJSON(o, s.version(o.ObjName()), s.manifest())
}

// learn records what a refusal teaches, and says whether sending again
// can help.
func (s *session) learn(err error) bool {
	var ee *exception.Error
	if !errors.As(err, &ee) {
		return false
	}
	switch ee.Class {
	case "NoSuchMethod":
		if s.versionsMethod || ee.Module != exception.ModuleDispatcher {
			return false
		}
		s.versionsMethod = true
		return true
	case "IncompatibleObjectVersion":
		name, _ := ee.Kwargs["objname"].(string)
		supported, _ := ee.Kwargs["supported"].(string)
		if name == "" || supported == "" || s.version(name) == supported {
			return false
		}
		if s.peer == nil {
			s.peer = map[string]string{}
		}
		s.peer[name] = supported
		return true
	}
	return false
}

// send runs a request whose arguments include the primitives of objs,
// built at the versions the peer takes, until the peer stops teaching.
func (s *session) send(objs []objects.Object, fn func(prims []json.RawMessage) error) error {
	var err error
	for range maxNegotiation {
		prims := make([]json.RawMessage, len(objs))
		for i, o := range objs {
			if prims[i], err = s.primitive(o); err != nil {
				return err
			}
		}
		if err = fn(prims); err == nil || !s.learn(err) {
			return err
		}
	}
	return err
}

// objectClassAction is Object.method(args...) in the conductor, through
// object_class_action or object_class_action_versions as the peer serves.
func (s *session) objectClassAction(ctx context.Context, name, method string, args []any, kwargs map[string]any) (json.RawMessage, error) {
	var raw json.RawMessage
	err := s.send(nil, func([]json.RawMessage) (err error) {
		if s.versionsMethod {
			raw, err = s.api.ObjectClassActionVersions(ctx, name, method, s.manifest(), args, kwargs)
		} else {
			raw, err = s.api.ObjectClassAction(ctx, name, method, s.version(name), args, kwargs)
		}
		return err
	})
	return raw, err
}
