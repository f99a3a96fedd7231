package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// exampleOpts is an outside driver's option group.
type exampleOpts struct {
	Endpoint string        `ini:"endpoint" type:"url" default:"http://127.0.0.1:8080" help:"where"`
	Token    string        `ini:"token" secret:"true" help:"the token"`
	Timeout  time.Duration `ini:"timeout" unit:"s" default:"30" min:"1" help:"timeout"`
	Mode     string        `ini:"mode" default:"fast" choices:"fast|safe" help:"mode"`
	Zones    []string      `ini:"zones" help:"zones"`
	Dir      string        `ini:"dir" default:"$state_path/example" help:"state"`
	Old      int           `ini:"retries" default:"3" deprecated:"example_old.tries" help:"retries"`
}

func TestLoadGroupReadsAnOutsideGroup(t *testing.T) {
	var o exampleOpts
	err := LoadGroupSources([]Source{{Name: "a.conf", Data: []byte("[DEFAULT]\nstate_path = /srv\n[example_driver]\ntimeout = 5\nzones = a, b\n" +
		"[example_old]\ntries = 7\n")}, {Name: "b.conf", Data: []byte("[Example_Driver]\nmode = safe\ntoken = s3cret\n")}},
		"example_driver", &o)
	if err != nil {
		t.Fatal(err)
	}
	want := exampleOpts{Endpoint: "http://127.0.0.1:8080", Token: "s3cret", Timeout: 5 * time.Second, Mode: "safe",
		Zones: []string{"a", "b"}, Dir: "/srv/example", Old: 7}
	if o.Endpoint != want.Endpoint || o.Token != want.Token || o.Timeout != want.Timeout || o.Mode != want.Mode ||
		strings.Join(o.Zones, ",") != "a,b" || o.Dir != want.Dir || o.Old != want.Old {
		t.Fatalf("%+v, want %+v", o, want)
	}
}

func TestLoadGroupReportsEveryBadValue(t *testing.T) {
	var o exampleOpts
	err := LoadGroupSources([]Source{{Name: "a.conf", Data: []byte("[example_driver]\ntimeout = 0\nmode = slow\ntoken = $nope\n")}},
		"example_driver", &o)
	var ve *ValueError
	if !errors.As(err, &ve) {
		t.Fatalf("%v", err)
	}
	for _, want := range []string{"timeout", "mode", "slow", "token"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "$nope") {
		t.Errorf("a secret's value is in the error: %v", err)
	}
	if err := LoadGroupSources(nil, "conductor", &o); err == nil {
		t.Error("one of Config's own groups was accepted")
	}
	if err := LoadGroupSources(nil, "example_driver", o); err == nil {
		t.Error("a struct value (not a pointer) was accepted")
	}
	type bad struct {
		D time.Duration `ini:"d"`
	}
	if err := LoadGroupSources(nil, "example_driver", &bad{}); err == nil {
		t.Error("a malformed tag was accepted")
	}
}
