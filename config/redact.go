package config

import (
	"log/slog"
	"reflect"
)

// Redacted is what LogValue shows instead of a secret option's value.
const Redacted = "****"

// LogValue implements slog.LogValuer: every option as group.name = value,
// with secret options (passwords, transport and database URLs) replaced by
// "****" when set. Log it once at start-up:
//
//	logger.Info("configuration", "config", cfg)
func (c *Config) LogValue() slog.Value {
	defs, err := definitions()
	if err != nil {
		return slog.StringValue("config: " + err.Error())
	}
	cv := reflect.ValueOf(c).Elem()
	var groups []slog.Attr
	var attrs []any
	group := ""
	for _, d := range defs {
		if d.group != group {
			if group != "" {
				groups = append(groups, slog.Group(group, attrs...))
			}
			group, attrs = d.group, nil
		}
		f := cv.Field(d.groupIdx).Field(d.fieldIdx)
		switch {
		case d.secret && !f.IsZero():
			attrs = append(attrs, slog.String(d.name, Redacted))
		default:
			attrs = append(attrs, slog.Any(d.name, f.Interface()))
		}
	}
	if group != "" {
		groups = append(groups, slog.Group(group, attrs...))
	}
	return slog.GroupValue(groups...)
}
