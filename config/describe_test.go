package config

import (
	"slices"
	"testing"
)

func TestOptionsDescribeTheDefinitions(t *testing.T) {
	opts, err := Options()
	if err != nil {
		t.Fatal(err)
	}
	defs, err := definitions()
	if err != nil {
		t.Fatal(err)
	}
	eq(t, len(opts), len(defs))
	find := func(group, name string) Option {
		t.Helper()
		i := slices.IndexFunc(opts, func(o Option) bool { return o.Group == group && o.Name == name })
		if i < 0 {
			t.Fatalf("no option [%s] %s", group, name)
		}
		return opts[i]
	}
	// A whole group new (the tag on Config's field), one option new in a
	// group Magnum has, and Magnum's own options.
	eq(t, find("capi_driver", "kubeconfig").New, true)
	eq(t, find("simulated_driver", "operation_delay").New, true)
	eq(t, find("conductor", "driver_call_timeout").New, true)
	eq(t, find("conductor", "topic").New, false)
	eq(t, find("DEFAULT", "transport_url").New, false)

	o := find("conductor", "update_timeout")
	eq(t, o.Unit, "minutes")
	eq(t, o.Type, "integer value")
	eq(t, o.Default, "-1")
	eq(t, *o.Min, -1.0)
	eq(t, find("conductor", "shutdown_grace_period").Unit, "seconds")
	eq(t, find("conductor", "topic").Unit, "")
	eq(t, find("conductor", "workers").Default, "<None>")
	eq(t, find("DEFAULT", "host").Default, "<current hostname>")
	eq(t, find("DEFAULT", "transport_url").Secret, true)
	eq(t, find("periodic", "coordination").Choices, []string{"hash", "none"})
	eq(t, find("database", "connection").Deprecated,
		[]string{"[DEFAULT] sql_connection", "[database] sql_connection", "[sql] connection"})
}
