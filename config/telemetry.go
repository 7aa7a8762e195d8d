package config

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Telemetry configures OpenTelemetry traces. Tracing is off unless
// Endpoint or TracesEndpoint is set. The standard OTEL_* variables
// (OTELEnv) take precedence over these settings, whether they come from the
// file or from TOOLGUARD_TELEMETRY_* variables.
type Telemetry struct {
	// Endpoint is the collector's OTLP/HTTP base URL
	// (http://collector:4318); spans go to its /v1/traces.
	Endpoint string `yaml:"endpoint" env:"ENDPOINT"`
	// TracesEndpoint is the full URL spans go to; it wins over Endpoint.
	TracesEndpoint string `yaml:"traces_endpoint" env:"TRACES_ENDPOINT"`
	// Protocol is http/protobuf or http/json; grpc is not supported.
	Protocol string `yaml:"protocol" env:"PROTOCOL"`
	// ServiceName is the service.name of toolguard's spans.
	ServiceName string `yaml:"service_name" env:"SERVICE_NAME"`
	// Sampler is an OTEL_TRACES_SAMPLER name (TelemetrySamplers), and
	// SamplerArg the ratio of the traceidratio samplers ("" means 1).
	Sampler    string `yaml:"sampler" env:"SAMPLER"`
	SamplerArg string `yaml:"sampler_arg" env:"SAMPLER_ARG"`
}

// TelemetrySamplers are the sampler names telemetry.sampler accepts: the
// OTEL_TRACES_SAMPLER values the OpenTelemetry Go SDK implements.
var TelemetrySamplers = []string{
	"always_on", "always_off", "traceidratio",
	"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio",
}

// OTELEnv maps the standard OpenTelemetry variables to the telemetry
// settings they override, in the order applied: a later variable wins
// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL over OTEL_EXPORTER_OTLP_PROTOCOL).
// OTEL_SDK_DISABLED=true turns tracing off whatever else is set.
var OTELEnv = []struct{ Var, Setting string }{
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "telemetry.endpoint"},
	{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "telemetry.traces_endpoint"},
	{"OTEL_EXPORTER_OTLP_PROTOCOL", "telemetry.protocol"},
	{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "telemetry.protocol"},
	{"OTEL_SERVICE_NAME", "telemetry.service_name"},
	{"OTEL_TRACES_SAMPLER", "telemetry.sampler"},
	{"OTEL_TRACES_SAMPLER_ARG", "telemetry.sampler_arg"},
}

// applyOTELEnv sets the telemetry settings from the OTEL_* variables of
// vars; an empty variable counts as unset.
func applyOTELEnv(t *Telemetry, vars map[string]string) {
	fields := map[string]*string{
		"telemetry.endpoint":        &t.Endpoint,
		"telemetry.traces_endpoint": &t.TracesEndpoint,
		"telemetry.protocol":        &t.Protocol,
		"telemetry.service_name":    &t.ServiceName,
		"telemetry.sampler":         &t.Sampler,
		"telemetry.sampler_arg":     &t.SamplerArg,
	}
	for _, e := range OTELEnv {
		if v := strings.TrimSpace(vars[e.Var]); v != "" {
			*fields[e.Setting] = v
		}
	}
	if strings.EqualFold(strings.TrimSpace(vars["OTEL_SDK_DISABLED"]), "true") {
		t.Endpoint, t.TracesEndpoint = "", ""
	}
}

// Enabled reports whether spans are exported: an endpoint is set.
func (t Telemetry) Enabled() bool { return t.Endpoint != "" || t.TracesEndpoint != "" }

func (t Telemetry) validate() error {
	for _, e := range []struct{ field, value, env string }{
		{"telemetry.endpoint", t.Endpoint, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"telemetry.traces_endpoint", t.TracesEndpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
	} {
		if u, err := url.Parse(e.value); e.value != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			return invalid(e.field, e.value, "want an absolute http(s) URL such as http://collector:4318, here or in "+e.env)
		}
	}
	switch t.Protocol {
	case "http/protobuf", "http/json":
	case "grpc":
		return invalid("telemetry.protocol", t.Protocol, "OTLP over gRPC is not supported: toolguard exports OTLP over HTTP; "+
			"set http/protobuf and the collector's HTTP port (4318), here or in OTEL_EXPORTER_OTLP_PROTOCOL, which wins")
	default:
		return invalid("telemetry.protocol", t.Protocol, "want http/protobuf or http/json, here or in OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if t.ServiceName == "" {
		return invalid("telemetry.service_name", "", "must not be empty (OTEL_SERVICE_NAME, when set, wins)")
	}
	if !slices.Contains(TelemetrySamplers, t.Sampler) {
		return invalid("telemetry.sampler", t.Sampler, fmt.Sprintf("want %s, here or in OTEL_TRACES_SAMPLER",
			enum{names: TelemetrySamplers}.want()))
	}
	if strings.HasSuffix(t.Sampler, "traceidratio") && t.SamplerArg != "" {
		if r, err := strconv.ParseFloat(t.SamplerArg, 64); err != nil || r < 0 || r > 1 {
			return invalid("telemetry.sampler_arg", t.SamplerArg, "want a ratio from 0 to 1, here or in OTEL_TRACES_SAMPLER_ARG")
		}
	}
	return nil
}
