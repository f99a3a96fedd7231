//go:build chaos

package chaos

import (
	"os"
	"testing"

	"github.com/openstack/magnum-conductor/test/harness"
)

var bins *harness.Binaries

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bins)) }
