package config

import (
	"cmp"
	"encoding"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/toolguard/toolguard/internal/suggest"
)

// ApplyEnv sets every setting whose environment variable (see the env tags
// of Config, after EnvPrefix) environ holds, in os.Environ's "KEY=value"
// form. Only environ is read, never the process environment. An empty value
// counts as unset. Values parse as in YAML; the first that does not is an
// *Error naming the variable, and then c is left unchanged. The standard
// OTEL_* variables of OTELEnv are applied last: they win over
// TOOLGUARD_TELEMETRY_* ones.
func ApplyEnv(c *Config, environ []string) error {
	vars := make(map[string]string, len(environ)) // non-nil: nil would make env read os.Environ
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	next := *c
	if err := growLists(&next, vars); err != nil {
		return err
	}
	if err := env.ParseWithOptions(&next, env.Options{Prefix: EnvPrefix, Environment: vars}); err != nil {
		return envError(err, vars)
	}
	applyOTELEnv(&next.Telemetry, vars)
	*c = next
	return nil
}

// growLists makes room in each list of sections for the items the
// environment adds (TOOLGUARD_NOTIFY_WEBHOOKS_<n>_URL beyond the file's
// items), on a copy of the list: env itself adds only items numbered from
// 0 in the environment. Added items must be numbered without gaps.
func growLists(c *Config, vars map[string]string) error {
	type named struct {
		index int
		name  string
	}
	found := map[string][]named{} // list path → the item variables set
	fields := map[string][]int{}  // list path → its field in Config
	for _, s := range itemSettings() {
		fields[s.list] = s.listIndex
		for name, v := range vars {
			if i, ok := s.envIndex(name); ok && v != "" {
				found[s.list] = append(found[s.list], named{i, name})
			}
		}
	}
	for list, vs := range found {
		slices.SortFunc(vs, func(a, b named) int { return cmp.Or(cmp.Compare(a.index, b.index), strings.Compare(a.name, b.name)) })
		v := reflect.ValueOf(c).Elem().FieldByIndex(fields[list])
		n, top := v.Len(), vs[len(vs)-1]
		if top.index < n {
			continue
		}
		for i := n; i <= top.index; i++ {
			if !slices.ContainsFunc(vs, func(x named) bool { return x.index == i }) {
				return &Error{Field: top.name, Value: vars[top.name], Msg: fmt.Sprintf(
					"no variable sets item %d of %s: number the items from 0 without gaps (the file has %d)", i, list, n)}
			}
		}
		grown := reflect.MakeSlice(v.Type(), top.index+1, top.index+1)
		reflect.Copy(grown, v)
		v.Set(grown)
	}
	return nil
}

// envError turns the first of env's errors into an *Error naming the
// variable. env reports only the Go field name and type, which are unique
// among the settings that can fail to parse (a test checks).
func envError(err error, vars map[string]string) error {
	var pe env.ParseError
	if errors.As(err, &pe) {
		for _, s := range settings() {
			v, set := vars[s.env]
			if set && s.field.Name == pe.Name && s.field.Type == pe.Type {
				return &Error{Field: s.env, Value: v, Msg: valueMsg(s.field.Type, v, pe.Err), Err: err}
			}
		}
		for _, s := range itemSettings() {
			if s.field.Name != pe.Name || s.field.Type != pe.Type {
				continue
			}
			// env names the field, not the item: find the variable whose
			// value does not parse.
			for _, name := range slices.Sorted(maps.Keys(vars)) {
				v := vars[name]
				if _, ok := s.envIndex(name); ok && v != "" && parseAs(s.field.Type, v) != nil {
					return &Error{Field: name, Value: v, Msg: valueMsg(s.field.Type, v, parseAs(s.field.Type, v)), Err: err}
				}
			}
		}
	}
	return &Error{Msg: err.Error(), Err: err}
}

// parseAs parses text as a value of type t, as env does, and returns
// its error.
func parseAs(t reflect.Type, text string) error {
	v := reflect.New(t)
	switch {
	case t == durationType:
		_, err := time.ParseDuration(text)
		return err
	case v.Type().Implements(textUnmarshalerType):
		return v.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text))
	case t.Kind() == reflect.Int:
		_, err := strconv.Atoi(text)
		return err
	case t.Kind() == reflect.Bool:
		_, err := strconv.ParseBool(text)
		return err
	}
	return nil
}

// valueMsg says why text is no value of type t; YAML and environment errors
// share it.
func valueMsg(t reflect.Type, text string, err error) string {
	switch {
	case t == durationType:
		return fmt.Sprintf("invalid duration %q (want e.g. 30s, 5m or 720h)", text)
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return err.Error()
	case t.Kind() == reflect.Int:
		return fmt.Sprintf("want a whole number (got %q)", text)
	case t.Kind() == reflect.Bool:
		return fmt.Sprintf("want true or false (got %q)", text)
	}
	return fmt.Sprintf("invalid value %q: %v", text, err)
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	listType            = reflect.TypeFor[List]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// setting is one leaf of Config: its place in the YAML, in the environment
// and in the Go struct.
type setting struct {
	path  string // "limits.max_body"
	env   string // "TOOLGUARD_MAX_BODY"
	index []int  // for reflect.Value.FieldByIndex on a Config
	field reflect.StructField
}

// settings lists the leaves of Config in declaration order.
var settings = sync.OnceValue(func() []setting {
	return appendSettings(nil, reflect.TypeFor[Config](), "", EnvPrefix, nil)
})

func appendSettings(list []setting, t reflect.Type, path, envPrefix string, index []int) []setting {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() || isSectionList(f.Type) {
			continue // a list's items are in itemSettings
		}
		idx := append(index[:len(index):len(index)], i)
		if isSection(f.Type) {
			list = appendSettings(list, f.Type, joinPath(path, name), envPrefix+f.Tag.Get("envPrefix"), idx)
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		list = append(list, setting{path: joinPath(path, name), env: envPrefix + key, index: idx, field: f})
	}
	return list
}

// isSection reports whether t is a group of settings rather than a value.
func isSection(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(textUnmarshalerType)
}

// isSectionList reports whether t is a list of groups of settings
// (notify.webhooks), whose items' settings are itemSettings.
func isSectionList(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && isSection(t.Elem())
}

// itemSetting is a leaf of the items of a list of sections, for every
// item: notify.webhooks[<n>].url, TOOLGUARD_NOTIFY_WEBHOOKS_<n>_URL.
type itemSetting struct {
	list      string // yaml path of the list: "notify.webhooks"
	envList   string // the items' environment prefix: "TOOLGUARD_NOTIFY_WEBHOOKS_"
	name      string // yaml key within the item: "url"
	envName   string // environment key within the item: "URL"
	listIndex []int  // the list's field, for reflect.Value.FieldByIndex on a Config
	field     reflect.StructField
}

// path is the yaml path of the setting of item i.
func (s itemSetting) path(i int) string { return s.list + "[" + strconv.Itoa(i) + "]." + s.name }

// env is the environment variable of the setting of item i.
func (s itemSetting) env(i int) string { return s.envList + strconv.Itoa(i) + "_" + s.envName }

// envIndex returns the item index of name when it is this setting's
// variable for some item.
func (s itemSetting) envIndex(name string) (int, bool) {
	return cutIndex(name, s.envList, "_"+s.envName)
}

// pathIndex returns the item index of a yaml path of this setting.
func (s itemSetting) pathIndex(path string) (int, bool) {
	return cutIndex(path, s.list+"[", "]."+s.name)
}

// cutIndex returns the number between prefix and suffix in s, written
// plainly.
func cutIndex(s, prefix, suffix string) (int, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return 0, false
	}
	num, ok := strings.CutSuffix(rest, suffix)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(num)
	if err != nil || i < 0 || num != strconv.Itoa(i) {
		return 0, false
	}
	return i, true
}

// itemSettings lists the leaves of the items of every list of sections
// in Config, in declaration order.
var itemSettings = sync.OnceValue(func() []itemSetting {
	return appendItemSettings(nil, reflect.TypeFor[Config](), "", EnvPrefix, nil)
})

func appendItemSettings(list []itemSetting, t reflect.Type, path, envPrefix string, index []int) []itemSetting {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		idx := append(index[:len(index):len(index)], i)
		switch {
		case isSection(f.Type):
			list = appendItemSettings(list, f.Type, joinPath(path, name), envPrefix+f.Tag.Get("envPrefix"), idx)
		case isSectionList(f.Type):
			item := f.Type.Elem()
			for k := range item.NumField() {
				g := item.Field(k)
				key, _, _ := strings.Cut(g.Tag.Get("yaml"), ",")
				if key == "-" || !g.IsExported() {
					continue
				}
				if isSection(g.Type) || isSectionList(g.Type) {
					panic("config: the items of " + joinPath(path, name) + " may hold values only")
				}
				envKey, _, _ := strings.Cut(g.Tag.Get("env"), ",")
				list = append(list, itemSetting{list: joinPath(path, name), envList: envPrefix + f.Tag.Get("envPrefix"),
					name: key, envName: envKey, listIndex: idx, field: g})
			}
		}
	}
	return list
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// OtherEnv are the TOOLGUARD_ variables that are not settings of serve but
// are read elsewhere (the CLI, tests, the benchmark harness); UnknownEnv
// leaves them alone.
var OtherEnv = []string{
	"TOOLGUARD_ADMIN_URL",     // CLI: the admin API to talk to
	"TOOLGUARD_AGENT_TOKEN",   // exec: the agent token given to the command
	"TOOLGUARD_CONFIG",        // exec: its config file, for doctor under it
	"TOOLGUARD_TEST_POSTGRES", // tests: the PostgreSQL to test against
	"TOOLGUARD_SCALE",         // tests: run the large-journal benchmarks
	"TOOLGUARD_SCALE_PATH",
	"TOOLGUARD_UNDICI", // tests: where Node's undici is installed
}

// UnknownEnv returns one warning for each variable of environ (as from
// os.Environ) that starts with EnvPrefix but names no setting and is not
// in OtherEnv, with the variable it was probably meant to be:
//
//	TOOLGUARD_LISTN is not a toolguard setting and is ignored (did you mean "TOOLGUARD_LISTEN"?)
//
// Such a variable is ignored; a typo would otherwise leave a setting at its
// default without a word.
func UnknownEnv(environ []string) []string {
	known := make([]string, 0, len(settings())+len(OtherEnv))
	byPath := map[string]string{} // "TOOLGUARD_LIMITS_MAX_BODY" → "TOOLGUARD_MAX_BODY"
	for _, s := range settings() {
		known = append(known, s.env)
		byPath[EnvPrefix+strings.ToUpper(strings.ReplaceAll(s.path, ".", "_"))] = s.env
	}
	known = append(known, OtherEnv...)
	isItem := func(name string) bool {
		return slices.ContainsFunc(itemSettings(), func(s itemSetting) bool { _, ok := s.envIndex(name); return ok })
	}
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || slices.Contains(known, name) || isItem(name) {
			continue
		}
		w := name + " is not a toolguard setting and is ignored"
		if env, ok := byPath[name]; ok {
			w += fmt.Sprintf(" (did you mean %q?)", env)
		} else {
			w += suggest.Hint(name, known)
		}
		warnings = append(warnings, w)
	}
	slices.Sort(warnings)
	return warnings
}
