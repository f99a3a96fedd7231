package service

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/config"
)

func TestDebugOptionSetsTheLogLevel(t *testing.T) {
	for _, tc := range []struct {
		ini   string
		debug bool
	}{{"[DEFAULT]\n", false}, {"[DEFAULT]\ndebug = true\n", true}} {
		cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte(tc.ini +
			"transport_url = rabbit://guest:pa55word@127.0.0.1:5672/\n")}})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		logging, err := openLogging(cfg, "text", &out)
		if err != nil {
			t.Fatal(err)
		}
		log := logging.Logger
		log.Debug("configuration", "config", cfg)
		got := strings.Contains(out.String(), "level=DEBUG msg=configuration")
		if got != tc.debug {
			t.Errorf("%q: debug line written = %v, want %v:\n%s", tc.ini, got, tc.debug, out.String())
		}
		if strings.Contains(out.String(), "pa55word") {
			t.Errorf("the transport_url password was logged:\n%s", out.String())
		}
	}
}

func TestSettleStartupReleasesPages(t *testing.T) {
	for _, release := range []bool{false, true} {
		var out bytes.Buffer
		settleStartup(release, slog.New(slog.NewTextHandler(&out, nil)))
		if strings.Contains(out.String(), "needs Linux 5.4") {
			t.Skip(out.String())
		}
		released := strings.Contains(out.String(), "released the start-up pages")
		if released != release || strings.Contains(out.String(), "could not release") {
			t.Errorf("release_startup_pages = %v logged %q", release, out.String())
		}
	}
	if residentBytes() <= 0 {
		t.Error("residentBytes read nothing from /proc/self/statm")
	}
}
