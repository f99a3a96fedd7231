// Package config reads magnum.conf the way oslo.config does, into one Go
// struct per option group.
//
//	cfg, err := config.Load(files, dirs) // --config-file ..., --config-dir ...
//	if err != nil { ... }                // every problem, joined
//	logger.Info("configuration", "config", cfg) // secrets redacted (LogValue)
//	store, err := db.Open(ctx, db.Options{Connection: cfg.Database.Connection, ...}, logger)
//
// Parsing follows oslo_config.iniparser and cfg.ConfigOpts:
//   - files in the order given, then each --config-dir's *.conf files (not
//     hidden ones) in lexical order; for a single-valued option the newest
//     file that sets it wins (its last assignment); a multi-string option
//     (a repeated key, e.g. [oslo_messaging_notifications] driver) collects
//     every value of every file, oldest file first;
//   - an option is looked up under its own group and name, then under its
//     deprecated names (e.g. [DEFAULT] sql_connection for [database]
//     connection); group names are case-insensitive except that only
//     [DEFAULT] is the default group; option names are case-sensitive;
//   - unknown groups and options are ignored;
//   - lines starting with a space or tab continue the previous value
//     (joined with a newline); "#" and ";" start comments only in column 0;
//     one pair of surrounding quotes is removed from a value;
//   - booleans: true/false, yes/no, on/off, 1/0 in any case; lists are
//     comma-separated (items trimmed, trailing commas dropped); dicts are
//     k:v,k2:v2; integers and floats as Python's int() and float();
//   - $name and ${name} interpolate the option's value from the same group,
//     then [DEFAULT]; $group.name and ${group.name} name the group; "$$" and
//     "\$" are a literal "$". Defaults are interpolated too
//     (state_path = $pybasedir).
//
// Differences from oslo.config, on purpose: an empty integer value keeps
// the default (oslo yields None); [DEFAULT] host defaults to the machine's
// hostname; interpolating an option Magnum has but this package does not
// model uses the raw value a file gives it; secret values never appear in
// errors; [conductor] metrics_listen without a host means 127.0.0.1.
//
// Time options are time.Duration fields; their unit in the file is in the
// `unit` tag (seconds unless it says min).
//
// The option definitions are the struct tags in options.go;
// etc/magnum/magnum.conf.sample is generated from them (go run ./config/gen,
// make sample) and TestSampleIsCurrent fails when it is stale.
package config
