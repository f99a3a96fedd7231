package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
)

// LoadGroup reads one option group that Config does not define (an
// outside cluster driver's) from the files and directories Load reads,
// with Load's rules: into is a pointer to a struct whose fields carry the
// tags Config's groups carry (ini, default, type, unit, min, max, choices,
// secret, deprecated); OS_<GROUP>__<OPTION> environment variables win over
// the files; every bad value is reported at once. A value may interpolate
// any option of Config ($state_path, $group.name) or of the group itself.
func LoadGroup(files, dirs []string, group string, into any) error {
	srcs, errs := readSources(files, dirs)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return loadGroup(srcs, os.LookupEnv, group, into)
}

// LoadGroupSources is LoadGroup for configuration already in memory.
func LoadGroupSources(srcs []Source, group string, into any) error {
	return loadGroup(srcs, nil, group, into)
}

func loadGroup(srcs []Source, env func(string) (string, bool), group string, into any) error {
	v := reflect.ValueOf(into)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("config: the options of [%s] are read into a pointer to a struct, not %T", group, into)
	}
	if group == "" {
		return errors.New("config: an option group needs a name")
	}
	g := normalizeGroup(group)
	r, _, errs := newResolver(srcs)
	if r == nil {
		return errors.Join(errs...)
	}
	if r.byName[g] != nil {
		return fmt.Errorf("config: [%s] is one of the conductor's own groups (Config)", group)
	}
	r.env = env
	st := v.Elem().Type()
	var defs []*optDef
	r.byName[g] = map[string]*optDef{}
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.IsExported() {
			continue
		}
		d, err := newOptDef(group, f)
		if err != nil {
			return fmt.Errorf("config: [%s] %s: %w", group, f.Name, err)
		}
		d.goField, d.fieldIdx = f.Name, i
		r.byName[g][d.name] = d
		defs = append(defs, d)
	}
	for _, d := range defs {
		val, err := r.get(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		assign(v.Elem().Field(d.fieldIdx), d, val)
	}
	return errors.Join(errs...)
}
