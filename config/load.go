package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"
)

// Source is one configuration file's contents, for LoadSources.
type Source struct {
	Name string // shown in errors
	Data []byte
}

// Load reads the configuration as oslo.config does for
// `--config-file F1 --config-file F2 ... --config-dir D1 ...`: the files in
// order, then each directory's *.conf files in lexical order; a later file
// wins. Options are looked up in their group, then under their deprecated
// names; unknown groups and options are ignored.
//
// Every problem is reported at once: the returned error joins (errors.Join)
// a *FileError per unreadable file or directory, a *ParseError per file
// with a syntax error, and a *ValueError per bad value. Use errors.As to
// pick them out.
//
// As in oslo.config, an environment variable OS_<GROUP>__<OPTION> (for
// example OS_DATABASE__CONNECTION, OS_DEFAULT__TRANSPORT_URL) wins over the
// files.
func Load(files, dirs []string) (*Config, error) {
	srcs, errs := readSources(files, dirs)
	cfg, err := loadSources(srcs, os.LookupEnv)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cfg, nil
}

// readSources reads the files, then each directory's *.conf files.
func readSources(files, dirs []string) ([]Source, []error) {
	var errs []error
	var srcs []Source
	read := func(path string) {
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, &FileError{Path: path, Err: readErr(err)})
			return
		}
		srcs = append(srcs, Source{Name: path, Data: data})
	}
	for _, f := range files {
		read(fixPath(f))
	}
	for _, d := range dirs {
		d = fixPath(d)
		entries, err := os.ReadDir(d)
		if err != nil {
			errs = append(errs, &FileError{Path: d, Dir: true, Err: readErr(err)})
			continue
		}
		// glob(dir/*.conf): no hidden files; sorted by name.
		var names []string
		for _, e := range entries {
			if n := e.Name(); strings.HasSuffix(n, ".conf") && !strings.HasPrefix(n, ".") {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			read(filepath.Join(d, n))
		}
	}
	return srcs, errs
}

// fixPath is oslo's _fixpath: expand ~ and make the path absolute.
func fixPath(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func readErr(err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("not found: %w", os.ErrNotExist)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("permission denied: %w", os.ErrPermission)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// LoadSources is Load for configuration already in memory (the first source
// is the oldest; later sources win). It also returns every problem at once.
func LoadSources(srcs []Source) (*Config, error) {
	return loadSources(srcs, nil)
}

// loadSources reads srcs, and with env the OS_<GROUP>__<OPTION> variables.
func loadSources(srcs []Source, env func(string) (string, bool)) (*Config, error) {
	r, defs, errs := newResolver(srcs)
	if r == nil {
		return nil, errors.Join(errs...)
	}
	r.env = env
	cfg := &Config{}
	cv := reflect.ValueOf(cfg).Elem()
	for _, d := range defs {
		v, err := r.get(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		assign(cv.Field(d.groupIdx).Field(d.fieldIdx), d, v)
	}
	if section := cfg.KeystoneAuth.AuthSection; section != "" {
		errs = append(errs, r.authSection(cv, defs, section)...)
	}
	errs = append(errs, crossChecks(cfg)...)
	if cfg.Default.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			errs = append(errs, fmt.Errorf("config: [DEFAULT] host is not set and the hostname is unknown: %w", err))
		}
		cfg.Default.Host = h
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cfg, nil
}

// newResolver parses the sources. A nil resolver means the definitions
// themselves are broken.
func newResolver(srcs []Source) (*resolver, []*optDef, []error) {
	defs, err := definitions()
	if err != nil {
		return nil, nil, []error{err}
	}
	var errs []error
	r := &resolver{
		byName: map[string]map[string]*optDef{},
		values: map[*optDef]any{},
		failed: map[*optDef]error{},
		active: map[*optDef]bool{},
	}
	for _, d := range defs {
		if r.byName[d.group] == nil {
			r.byName[d.group] = map[string]*optDef{}
		}
		r.byName[d.group][d.name] = d
	}
	for _, s := range srcs {
		f, err := parseINI(s.Name, string(s.Data))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.files = append(r.files, f)
	}
	return r, defs, errs
}

// crossChecks are the constraints between options that the Python services
// enforce later (at queue declaration, at start-up); here they fail Load.
// authSection reads the plugin options of [keystone_auth] from the section
// its auth_section names, as keystoneauth's load_from_conf_options does:
// auth_type and the password plugin's options come from there (their
// defaults too), the session options (cafile, insecure, timeout...) stay.
func (r *resolver) authSection(cv reflect.Value, defs []*optDef, section string) []error {
	var errs []error
	for _, d := range defs {
		if d.group != "keystone_auth" || !isAuthPluginOption(d.name) {
			continue
		}
		moved := *d
		moved.group, moved.deprecated = normalizeGroup(section), nil
		v, err := r.get(&moved)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f := cv.Field(d.groupIdx).Field(d.fieldIdx)
		f.Set(reflect.Zero(f.Type()))
		assign(f, d, v)
	}
	return errs
}

// isAuthPluginOption is whether a [keystone_auth] option belongs to the
// auth plugin (auth_type and the password plugin's options) rather than to
// the session.
func isAuthPluginOption(name string) bool {
	switch name {
	case "auth_type", "auth_url", "username", "password", "user_id", "project_name", "project_id",
		"user_domain_name", "user_domain_id", "project_domain_name", "project_domain_id", "system_scope", "trust_id":
		return true
	}
	return false
}

func crossChecks(c *Config) []error {
	var errs []error
	if c.Rabbit.RabbitQuorumQueue && c.Rabbit.RabbitHAQueues {
		errs = append(errs, errors.New("config: [oslo_messaging_rabbit] rabbit_quorum_queue and rabbit_ha_queues cannot both be true: "+
			"a queue is either quorum or HA (mirrored)"))
	}
	return errs
}

// assign stores an oslo value in the struct field. nil (None) leaves the
// zero value.
func assign(f reflect.Value, d *optDef, v any) {
	switch v := v.(type) {
	case nil:
		switch d.kind {
		case kindList, kindMulti:
			f.Set(reflect.ValueOf([]string{}))
		case kindDict:
			f.Set(reflect.ValueOf(map[string]string{}))
		}
	case string:
		f.SetString(v)
	case bool:
		f.SetBool(v)
	case int64:
		if d.unit != 0 {
			f.SetInt(v * int64(d.unit))
		} else {
			f.SetInt(v)
		}
	case float64:
		if d.unit != 0 {
			f.SetInt(int64(time.Duration(v * float64(d.unit))))
		} else {
			f.SetFloat(v)
		}
	case []string:
		f.Set(reflect.ValueOf(v))
	case dict:
		f.Set(reflect.ValueOf(v.m))
	}
}

// resolver finds, interpolates and converts option values, each once.
type resolver struct {
	files  []*iniFile // oldest first
	byName map[string]map[string]*optDef
	values map[*optDef]any
	failed map[*optDef]error
	active map[*optDef]bool // being resolved: a reference cycle
	// env looks up environment variables; nil reads none.
	env func(string) (string, bool)
}

// envName is oslo.config's name for an option in the environment.
func envName(group, name string) string {
	return "OS_" + strings.ToUpper(group) + "__" + strings.ToUpper(name)
}

// hit is where a raw value was found.
type hit struct {
	env   string // the environment variable, for a value from the environment
	file  string
	line  int
	group string
	name  string // as written: the option's name or a deprecated one
	text  string
}

// names is the option's lookup order: its own name, then deprecated ones.
func (d *optDef) names() []optName {
	return append([]optName{{d.group, d.name}}, d.deprecated...)
}

// lookup mirrors oslo's _get_file_value: the newest file that has any of the
// names wins, the first name found in that file, its last assignment. For a
// multi-string option, every file's values accumulate, oldest first.
func (r *resolver) lookup(names []optName, multi bool) []hit {
	var out []hit
	for i := len(r.files) - 1; i >= 0; i-- {
		f := r.files[i]
		for _, n := range names {
			vals := f.sections[n.group][n.name]
			if len(vals) == 0 {
				continue
			}
			if !multi {
				v := vals[len(vals)-1]
				return []hit{{file: f.path, line: v.line, group: n.group, name: n.name, text: v.text}}
			}
			hs := make([]hit, len(vals))
			for j, v := range vals {
				hs[j] = hit{file: f.path, line: v.line, group: n.group, name: n.name, text: v.text}
			}
			out = append(hs, out...)
		}
	}
	return out
}

// maxDepth bounds nested interpolation of options this package does not model.
const maxDepth = 32

func (r *resolver) get(d *optDef) (any, error) {
	if v, ok := r.values[d]; ok {
		return v, nil
	}
	if err := r.failed[d]; err != nil {
		return nil, err
	}
	if r.active[d] {
		return nil, fmt.Errorf("interpolation loop through [%s] %s", d.group, d.name)
	}
	r.active[d] = true
	defer delete(r.active, d)

	v, err := r.resolve(d)
	if err != nil {
		r.failed[d] = err
		return nil, err
	}
	r.values[d] = v
	return v, nil
}

func (r *resolver) resolve(d *optDef) (any, error) {
	var hits []hit
	if r.env != nil {
		// The environment wins over the files (oslo.config's
		// EnvironmentConfigurationSource), under the option's own name only.
		name := envName(d.group, d.name)
		if text, ok := r.env(name); ok {
			hits = []hit{{env: name, group: d.group, name: d.name, text: text}}
		}
	}
	if hits == nil {
		hits = r.lookup(d.names(), d.kind == kindMulti)
	}
	if len(hits) == 0 {
		if !d.hasDefault {
			if d.kind == kindMulti {
				return []string{}, nil
			}
			return nil, nil
		}
		v, err := r.convertText(d, d.def, hit{group: d.group, name: d.name, text: d.def})
		if err != nil {
			return nil, err
		}
		if d.kind == kindMulti {
			return []string{v.(string)}, nil
		}
		return v, nil
	}
	if d.kind == kindMulti {
		out := make([]string, 0, len(hits))
		for _, h := range hits {
			v, err := r.convertText(d, h.text, h)
			if err != nil {
				return nil, err
			}
			out = append(out, v.(string))
		}
		return out, nil
	}
	v, err := r.convertText(d, hits[0].text, hits[0])
	if err != nil {
		return nil, err
	}
	if v == nil && d.hasDefault && (d.kind == kindInt || d.kind == kindFloat) {
		// An empty number is None in oslo; the Go field keeps its default.
		return r.convertText(d, d.def, hit{group: d.group, name: d.name, text: d.def})
	}
	return v, nil
}

// convertText interpolates and converts text found at h.
func (r *resolver) convertText(d *optDef, text string, h hit) (any, error) {
	verr := func(reason string) error {
		val := text
		if d.secret {
			val = "****"
		}
		return &ValueError{File: h.file, Line: h.line, Env: h.env, Group: h.group, Option: h.name, Value: val, Reason: reason}
	}
	s, err := r.substitute(d.group, text, 0)
	if err != nil {
		if d.secret {
			// The message would name the part of the secret after "$".
			return nil, verr(`a "$" starts an interpolation that fails (write $$ for a literal $)`)
		}
		return nil, verr(err.Error())
	}
	v, err := d.convert(s)
	if err != nil {
		if d.secret && d.syntax != "url" {
			return nil, verr("invalid value")
		}
		return nil, verr(err.Error())
	}
	return v, nil
}

// substitute expands $name, ${name}, $group.name and ${group.name} as
// oslo.config's string.Template does (safe_substitute: a "$" not followed
// by a name stays as it is), after turning "\$" into "$$"; "$$" is "$".
// A plain name is looked up in the option's own group, then in [DEFAULT].
func (r *resolver) substitute(group, s string, depth int) (string, error) {
	if depth > maxDepth {
		return "", errors.New("interpolation nested too deeply (a loop?)")
	}
	if !strings.Contains(s, "$") {
		return s, nil
	}
	s = strings.ReplaceAll(s, `\$`, "$$")
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		next := s[i+1]
		if next == '$' {
			b.WriteByte('$')
			i += 2
			continue
		}
		var name string
		var end int
		if n := identLen(s[i+1:]); n > 0 {
			name, end = s[i+1:i+1+n], i+1+n
		} else if next == '{' {
			n := identLen(s[i+2:])
			if n > 0 && i+2+n < len(s) && s[i+2+n] == '}' {
				name, end = s[i+2:i+2+n], i+3+n
			}
		}
		if name == "" {
			b.WriteByte('$')
			i++
			continue
		}
		v, err := r.reference(group, name, depth)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		i = end
	}
	return b.String(), nil
}

// identLen is the length of the Template identifier [_a-z][._a-z0-9]*
// (case-insensitive) at the start of s.
func identLen(s string) int {
	n := 0
	for ; n < len(s); n++ {
		c := s[n]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		if !letter && (n == 0 || !(c >= '0' && c <= '9' || c == '.')) {
			break
		}
	}
	return n
}

// reference is the string value of the option a template names.
func (r *resolver) reference(group, name string, depth int) (string, error) {
	candidates := []optName{{group, name}, {"DEFAULT", name}}
	if g, n, ok := strings.Cut(name, "."); ok {
		candidates = []optName{{normalizeGroup(g), n}}
	}
	for _, c := range candidates {
		if d := r.byName[c.group][c.name]; d != nil {
			v, err := r.get(d)
			if err != nil {
				var ve *ValueError
				if errors.As(err, &ve) {
					return "", fmt.Errorf("cannot interpolate $%s: [%s] %s is invalid", name, d.group, d.name)
				}
				return "", fmt.Errorf("cannot interpolate $%s: %w", name, err)
			}
			return pyStr(v), nil
		}
	}
	// An option Magnum has but this conductor does not model: use its raw
	// value when a file sets it.
	for _, c := range candidates {
		if hs := r.lookup([]optName{c}, false); len(hs) > 0 {
			return r.substitute(c.group, hs[0].text, depth+1)
		}
	}
	return "", fmt.Errorf("cannot interpolate $%s: no such option", name)
}
