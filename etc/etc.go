// Package etc embeds the development configuration, so that a binary can
// start without any file (`magnum-conductor` with no --config-file in a
// checkout uses the same settings as `make run`).
package etc

import _ "embed"

//go:embed magnum/magnum-dev.conf
var devConf []byte

// DevConf returns a copy of etc/magnum/magnum-dev.conf, for
// config.LoadSources([]config.Source{{Name: DevConfName, Data: etc.DevConf()}}).
func DevConf() []byte { return append([]byte(nil), devConf...) }

// DevConfName names the embedded file in configuration errors.
const DevConfName = "etc/magnum/magnum-dev.conf (embedded)"
