package config

import (
	"reflect"
	"strings"
	"testing"
)

// The standard OTEL_* variables win over the telemetry settings, from the
// file or from TOOLGUARD_TELEMETRY_* variables.
func TestTelemetryPrecedence(t *testing.T) {
	file := "telemetry:\n  endpoint: http://file:4318\n  service_name: from-file\n  sampler: always_off\n"
	tests := []struct {
		name    string
		environ []string
		want    Telemetry
	}{
		{name: "file", want: Telemetry{Endpoint: "http://file:4318", Protocol: "http/protobuf", ServiceName: "from-file", Sampler: "always_off"}},
		{
			name:    "toolguard variables over the file",
			environ: []string{"TOOLGUARD_TELEMETRY_ENDPOINT=http://tg:4318", "TOOLGUARD_TELEMETRY_SERVICE_NAME=from-tg"},
			want:    Telemetry{Endpoint: "http://tg:4318", Protocol: "http/protobuf", ServiceName: "from-tg", Sampler: "always_off"},
		},
		{
			name: "OTEL variables over both",
			environ: []string{
				"TOOLGUARD_TELEMETRY_ENDPOINT=http://tg:4318", "OTEL_EXPORTER_OTLP_ENDPOINT=http://otel:4318",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://otel:4318/custom",
				"OTEL_EXPORTER_OTLP_PROTOCOL=http/json",
				"TOOLGUARD_TELEMETRY_SERVICE_NAME=from-tg", "OTEL_SERVICE_NAME=from-otel",
				"OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.25",
			},
			want: Telemetry{Endpoint: "http://otel:4318", TracesEndpoint: "http://otel:4318/custom", Protocol: "http/json",
				ServiceName: "from-otel", Sampler: "parentbased_traceidratio", SamplerArg: "0.25"},
		},
		{
			name:    "the traces protocol over the general one",
			environ: []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
			want:    Telemetry{Endpoint: "http://file:4318", Protocol: "http/json", ServiceName: "from-file", Sampler: "always_off"},
		},
		{
			name:    "empty OTEL variables count as unset",
			environ: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_SERVICE_NAME= "},
			want:    Telemetry{Endpoint: "http://file:4318", Protocol: "http/protobuf", ServiceName: "from-file", Sampler: "always_off"},
		},
		{
			name:    "OTEL_SDK_DISABLED turns tracing off",
			environ: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://otel:4318", "OTEL_SDK_DISABLED=true"},
			want:    Telemetry{Protocol: "http/protobuf", ServiceName: "from-file", Sampler: "always_off"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(strings.NewReader(file), Default())
			if err != nil {
				t.Fatal(err)
			}
			if err := ApplyEnv(&c, tc.environ); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Telemetry, tc.want) {
				t.Errorf("telemetry\n got %+v\nwant %+v", c.Telemetry, tc.want)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestTelemetryValidate(t *testing.T) {
	tests := []struct {
		name string
		set  func(*Telemetry)
		want string // "" for valid
	}{
		{name: "default: off", set: func(*Telemetry) {}},
		{name: "endpoint", set: func(t *Telemetry) { t.Endpoint = "https://collector.example:4318" }},
		{name: "traces endpoint", set: func(t *Telemetry) { t.TracesEndpoint = "http://127.0.0.1:4318/v1/traces" }},
		{name: "endpoint without scheme", set: func(t *Telemetry) { t.Endpoint = "collector:4318" },
			want: `telemetry.endpoint (TOOLGUARD_TELEMETRY_ENDPOINT): want an absolute http(s) URL such as http://collector:4318, here or in OTEL_EXPORTER_OTLP_ENDPOINT (got collector:4318)`},
		{name: "traces endpoint not http", set: func(t *Telemetry) { t.TracesEndpoint = "grpc://c:4317" },
			want: `telemetry.traces_endpoint (TOOLGUARD_TELEMETRY_TRACES_ENDPOINT): want an absolute http(s) URL`},
		{name: "grpc", set: func(t *Telemetry) { t.Protocol = "grpc" },
			want: `telemetry.protocol (TOOLGUARD_TELEMETRY_PROTOCOL): OTLP over gRPC is not supported`},
		{name: "unknown protocol", set: func(t *Telemetry) { t.Protocol = "http" },
			want: `telemetry.protocol (TOOLGUARD_TELEMETRY_PROTOCOL): want http/protobuf or http/json`},
		{name: "json", set: func(t *Telemetry) { t.Protocol = "http/json" }},
		{name: "empty service name", set: func(t *Telemetry) { t.ServiceName = "" },
			want: `telemetry.service_name (TOOLGUARD_TELEMETRY_SERVICE_NAME): must not be empty`},
		{name: "unknown sampler", set: func(t *Telemetry) { t.Sampler = "xray" },
			want: `telemetry.sampler (TOOLGUARD_TELEMETRY_SAMPLER): want always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio, here or in OTEL_TRACES_SAMPLER (got xray)`},
		{name: "ratio", set: func(t *Telemetry) { t.Sampler, t.SamplerArg = "traceidratio", "0.1" }},
		{name: "ratio out of range", set: func(t *Telemetry) { t.Sampler, t.SamplerArg = "parentbased_traceidratio", "2" },
			want: `telemetry.sampler_arg (TOOLGUARD_TELEMETRY_SAMPLER_ARG): want a ratio from 0 to 1`},
		{name: "argument of a sampler without one is ignored", set: func(t *Telemetry) { t.Sampler, t.SamplerArg = "always_on", "x" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.set(&c.Telemetry)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("Validate\n got %v\nwant %s…", err, tc.want)
			}
		})
	}
}
