package config

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
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
	if err := env.ParseWithOptions(&next, env.Options{Prefix: EnvPrefix, Environment: vars}); err != nil {
		return envError(err, vars)
	}
	applyOTELEnv(&next.Telemetry, vars)
	*c = next
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
	}
	return &Error{Msg: err.Error(), Err: err}
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
		if name == "-" || !f.IsExported() {
			continue
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
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || slices.Contains(known, name) {
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
